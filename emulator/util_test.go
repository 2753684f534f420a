package emulator_test

import (
	"encoding/json"
	"net/url"
	"os"
	"strings"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func urlEscape(s string) string { return url.QueryEscape(s) }

func readFile(p string) ([]byte, error) { return os.ReadFile(p) }

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
