//go:build !unix

package reconcile_test

import (
	"os"
	"testing"
)

// maxRSSMB is not known here: reported as 0.
func maxRSSMB(testing.TB, *os.ProcessState) float64 { return 0 }

// cpuSeconds is not known here: reported as 0.
func cpuSeconds() float64 { return 0 }
