// Package connlist is the pane listing connections: client, server,
// protocol, units and bytes per direction, a checksum summary and a
// problem badge. Its first row stands for all connections; moving the
// cursor narrows the unit list to the chosen connection.
package connlist
