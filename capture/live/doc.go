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
//   - afpacket: wiretap's own packet socket (AF_PACKET, SOCK_RAW, all
//     protocols) bound to one named interface, read in Go through the
//     runtime's poller, needing no other program but root or CAP_NET_RAW.
//     A filter is compiled to classic BPF by `tcpdump -dd` when tcpdump is
//     installed, and refused otherwise; the kernel runs it on the socket
//     (SO_ATTACH_FILTER), attached before the socket is bound so that no
//     unfiltered frame slips in. Frames are cut to the snap length but keep
//     their length on the wire (the kernel's auxiliary data) and carry the
//     kernel's receive time (SO_TIMESTAMPNS). On a loopback interface it
//     drops the outgoing copy of each packet, as libpcap does.
//
// Both stop when the context is done and flush what reassembly holds.
package live
