//go:build race

package main

// raceBuild: the tests run under the race detector, and so does the
// binary they build (TestMain): read's goroutines then meet it too.
const raceBuild = true
