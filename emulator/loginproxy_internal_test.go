package emulator

import "testing"

func TestProxyAllowed(t *testing.T) {
	self := "127.0.0.1:8443"
	for hostport, want := range map[string]bool{
		self:                            true,
		"login.microsoftonline.com:443": true,
		"kv1.vault.azure.net:443":       true,
		"kv1.vault.azure.net:8443":      false,
		"a.b.vault.azure.net:443":       false,
		"management.azure.com:443":      false,
		"example.com:443":               false,
		"vault.azure.net:443":           false,
	} {
		if got := proxyAllowed(hostport, self); got != want {
			t.Errorf("proxyAllowed(%q) = %v, want %v", hostport, got, want)
		}
	}
}
