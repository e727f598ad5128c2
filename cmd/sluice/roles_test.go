package main

import (
	"io"
	"testing"
)

// Goal: the process roles are refused when they make no sense or would
// expose the mock's ground truth off the machine.
func TestRoleFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"-node-addr", "127.0.0.1:0"}, true},
		{[]string{"-node-addr", "[::1]:9000", "-api=false", "-workers", "0"}, true},
		{[]string{"-api=false", "-node-url", "http://127.0.0.1:9000"}, true},
		{[]string{"-node-addr", "0.0.0.0:9000"}, false},
		{[]string{"-node-addr", "example.com:9000"}, false},
		{[]string{"-node-addr", "127.0.0.1:1", "-node-url", "http://127.0.0.1:2"}, false},
		{[]string{"-api=false", "-workers", "0"}, false},
		{[]string{"-node-url", "127.0.0.1:9000"}, false},
		{[]string{"-node-url", "http://127.0.0.1:9000", "-node-timeout", "0s"}, false},
	} {
		_, err := parseFlags(c.args, io.Discard, io.Discard)
		if (err == nil) != c.ok {
			t.Errorf("parseFlags(%q): err %v, want ok=%v", c.args, err, c.ok)
		}
	}
}
