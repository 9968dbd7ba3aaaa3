// Package unitlist is the pane listing units, one row each: number, time,
// connection, direction, channel, badges, type and summary. Units carried
// in a CompressedMessages are shown as B* rows nested under it, collapsed
// until the container is expanded. Rendering touches only the visible rows.
package unitlist
