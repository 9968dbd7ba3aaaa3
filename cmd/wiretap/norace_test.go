//go:build !race

package main

// raceBuild: the tests run without the race detector (see race_test.go).
const raceBuild = false
