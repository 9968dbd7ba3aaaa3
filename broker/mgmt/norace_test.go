//go:build !race

package mgmt

const raceEnabled = false
