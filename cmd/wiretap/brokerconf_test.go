package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestBrokerConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rabbitmq.conf")
	conf := `# a rabbitmq.conf
listeners.tcp.default = 127.0.0.1:5999
frame_max = 65536
channel_max = 100
heartbeat = 30
max_message_size = 1048576
vm_memory_high_watermark.absolute = 512MiB
management.tcp.port = 16000
default_user = app
default_pass = secret
default_vhost = prod
loopback_users = none
cluster_formation.peer_discovery_backend = classic_config
`
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	bc, err := parseBrokerConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	var bf brokerFlags
	cmd := &cobra.Command{}
	bf.register(cmd)
	cmd.Flags().Set("channel-max", "7") // the command line wins
	if err := bc.apply(cmd.Flags()); err != nil {
		t.Fatal(err)
	}
	if bf.listen != "127.0.0.1:5999" || bf.frameMax != 65536 || bf.channelMax != 7 || bf.heartbeat.String() != "30s" ||
		bf.maxMessage != 1<<20 || bf.watermark != 512<<20 || bf.management != "127.0.0.1:16000" {
		t.Fatalf("flags after the file: %+v", bf)
	}
	if bc.users == nil || !bc.users.CheckPassword("app", "secret") || !bc.users.VHostExists("prod") || bc.users.VHostExists("/") {
		t.Fatal("default_user, default_pass and default_vhost not applied")
	}
	if len(bc.notes) != 1 || !strings.Contains(bc.notes[0], "cluster_formation.peer_discovery_backend") {
		t.Fatalf("notes %q: want the unknown key reported", bc.notes)
	}

	os.WriteFile(path, []byte("frame_max\n"), 0o600)
	if _, err := parseBrokerConfig(path); err == nil || !strings.Contains(err.Error(), ":1:") {
		t.Fatalf("a line without = : %v", err)
	}
}
