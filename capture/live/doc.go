// Package live captures packets from a network interface and feeds them,
// reassembled, to a capture.Handler: what `wiretap capture -i IFACE -f BPF`
// runs.
//
// Two engines, chosen by [Config.Engine]:
//
//   - dumpcap (the default when Wireshark's dumpcap is installed): dumpcap
//     captures with libpcap and writes pcapng to a pipe that wiretap reads
//     with the same code as a file. It gives libpcap's whole filter
//     language, the "any" pseudo-interface (Linux cooked SLL2 records), and
//     capture without root for members of the wireshark group, which is how
//     Debian installs dumpcap.
//   - afpacket: a pure-Go AF_PACKET socket (gopacket's pcapgo
//     EthernetHandle), needing no other program but root or CAP_NET_RAW.
//     It captures one named interface; a filter is compiled to classic BPF
//     by `tcpdump -dd` when tcpdump is installed, and refused otherwise. On
//     a loopback interface it drops the outgoing copy of each packet, as
//     libpcap does.
//
// Both stop when the context is done and flush what reassembly holds.
package live
