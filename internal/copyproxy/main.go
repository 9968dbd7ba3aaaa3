// Command copyproxy is the least a TCP proxy written in Go can do: accept,
// dial, and copy each way through a 64 KiB buffer, with nothing decoded,
// recorded or logged. scripts/proxy-overhead.sh runs it beside socat(1)
// and wiretap's proxy, to tell what any proxy costs on the machine from
// what wiretap's costs on top.
//
//	copyproxy LISTEN UPSTREAM
package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: copyproxy LISTEN UPSTREAM")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "copyproxy:", err)
		os.Exit(1)
	}
	// A script starts it in the background, where SIGINT is ignored
	// unless asked for.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		os.Exit(0)
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			continue
		}
		go func() {
			u, err := net.Dial("tcp", os.Args[2])
			if err != nil {
				c.Close()
				return
			}
			go copyEach(c, u)
			copyEach(u, c)
		}()
	}
}

// copyEach copies src to dst by read and write, as wiretap's proxy does
// (io.Copy would splice, which a proxy that looks at the bytes cannot).
func copyEach(src, dst net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	src.Close()
	dst.Close()
}
