package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/wiretap-dev/wiretap/broker"
	"github.com/wiretap-dev/wiretap/broker/auth"
)

// brokerConfig is what a RabbitMQ-style configuration file (rabbitmq.conf,
// the sysctl-like "key = value" format of RabbitMQ 3.7 and later) sets,
// for the keys the embedded broker has. Flags given on the command line
// win over the file.
type brokerConfig struct {
	set   map[string]string // flag name -> value
	users *auth.Store
	// notes are keys the broker does not implement, reported on stderr.
	notes []string
}

// parseBrokerConfig reads path. Errors name the line.
func parseBrokerConfig(path string) (*brokerConfig, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, inputErr(fmt.Errorf("broker: --config: %w", err))
	}
	defer fh.Close()
	bc := &brokerConfig{set: map[string]string{}}
	var defUser, defPass, defVHost string
	var tags []string
	loopback := []string{"guest"}
	loopbackSet := false
	mgmtIP := "127.0.0.1"
	sc := bufio.NewScanner(fh)
	n := 0
	bad := func(msg string) error {
		return usageErr("broker: --config %s:%d: %s", path, n, msg)
	}
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			return nil, bad("want key = value")
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch {
		case key == "listeners.tcp.default" || strings.HasPrefix(key, "listeners.tcp."):
			bc.set["listen"] = listenAddr(val)
		case key == "listeners.ssl.default" || strings.HasPrefix(key, "listeners.ssl."):
			bc.set["tls-listen"] = listenAddr(val)
		case key == "ssl_options.certfile":
			bc.set["tls-cert"] = val
		case key == "ssl_options.keyfile":
			bc.set["tls-key"] = val
		case key == "ssl_options.cacertfile":
			bc.set["tls-ca"] = val
		case key == "management.tcp.port":
			bc.set["management"] = net.JoinHostPort(mgmtIP, val)
		case key == "management.tcp.ip":
			mgmtIP = val
			if a, ok := bc.set["management"]; ok {
				_, port, _ := net.SplitHostPort(a)
				bc.set["management"] = net.JoinHostPort(val, port)
			}
		case key == "frame_max":
			bc.set["frame-max"] = val
		case key == "channel_max":
			bc.set["channel-max"] = val
		case key == "heartbeat":
			s, err := strconv.Atoi(val)
			if err != nil {
				return nil, bad("heartbeat: want seconds")
			}
			bc.set["heartbeat"] = (time.Duration(s) * time.Second).String()
		case key == "max_message_size":
			bc.set["max-message-size"] = val
		case key == "connection_max":
			if val != "infinity" {
				bc.set["max-connections"] = val
			}
		case key == "vm_memory_high_watermark.absolute":
			b, err := parseSize(val)
			if err != nil {
				return nil, bad("vm_memory_high_watermark.absolute: " + err.Error())
			}
			bc.set["memory-high-watermark"] = strconv.FormatInt(b, 10)
		case key == "vm_memory_high_watermark.relative":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil || f <= 0 {
				return nil, bad("vm_memory_high_watermark.relative: want a fraction")
			}
			bc.set["memory-high-watermark"] = strconv.FormatInt(int64(f*float64(broker.PhysicalMemory())), 10)
		case key == "default_user":
			defUser = val
		case key == "default_pass":
			defPass = val
		case key == "default_vhost":
			defVHost = val
		case strings.HasPrefix(key, "default_user_tags."):
			if val == "true" {
				tags = append(tags, strings.TrimPrefix(key, "default_user_tags."))
			}
		case key == "loopback_users":
			if val != "none" {
				return nil, bad("loopback_users: want none, or loopback_users.NAME = true|false")
			}
			loopback, loopbackSet = nil, true
		case strings.HasPrefix(key, "loopback_users."):
			name := strings.TrimPrefix(key, "loopback_users.")
			loopbackSet = true
			if val == "true" {
				loopback = append(loopback, name)
			} else {
				loopback = removeString(loopback, name)
			}
		default:
			bc.notes = append(bc.notes, fmt.Sprintf("broker: --config %s:%d: %s is not a setting of the embedded broker; ignored", path, n, key))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, inputErr(fmt.Errorf("broker: --config: %w", err))
	}
	if defUser != "" || defPass != "" || defVHost != "" || loopbackSet || tags != nil {
		st := auth.NewStore()
		if defVHost == "" {
			defVHost = "/"
		}
		if defUser == "" {
			defUser = "guest"
		}
		if defPass == "" {
			defPass = "guest"
		}
		if tags == nil {
			tags = []string{"administrator"}
		}
		st.PutVHost(defVHost, "", nil)
		st.PutUser(defUser, defPass, tags)
		if err := st.SetPermissions(defUser, defVHost, ".*", ".*", ".*"); err != nil {
			return nil, bad(err.Error())
		}
		st.SetLoopbackUsers(loopback...)
		bc.users = st
	}
	return bc, nil
}

// listenAddr reads a RabbitMQ listener: a port (on all interfaces, as
// RabbitMQ listens) or host:port.
func listenAddr(v string) string {
	if _, err := strconv.Atoi(v); err == nil {
		return ":" + v
	}
	return v
}

func removeString(s []string, x string) []string {
	out := s[:0]
	for _, e := range s {
		if e != x {
			out = append(out, e)
		}
	}
	return out
}

// parseSize reads RabbitMQ's sizes: bytes, or with kB/MB/GB (powers of
// ten) or KiB/MiB/GiB.
func parseSize(v string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"KB", 1e3}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
			if err != nil {
				return 0, err
			}
			return n * u.mult, nil
		}
	}
	return strconv.ParseInt(v, 10, 64)
}

// apply sets the flags the file gives and the command line did not.
func (bc *brokerConfig) apply(fs *pflag.FlagSet) error {
	for name, val := range bc.set {
		f := fs.Lookup(name)
		if f == nil || f.Changed {
			continue
		}
		if err := f.Value.Set(val); err != nil {
			return usageErr("broker: --config: %s = %s: %v", name, val, err)
		}
	}
	return nil
}
