package main

import (
	"os"
	"testing"
)

// asCLIEnv makes the test binary run as gtpqos itself (main with the
// arguments it was given), so that a test can run the command as a
// process without building it first.
const asCLIEnv = "GTPQOS_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLIEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}
