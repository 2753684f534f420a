package charts

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// isSSHURL reports whether a GitRepository's spec.url is an SSH address:
// ssh://[user@]host[:port]/path, or the scp-like user@host:path.
func isSSHURL(u string) bool {
	if strings.HasPrefix(u, "ssh://") {
		return true
	}
	at, colon := strings.Index(u, "@"), strings.Index(u, ":")
	return !strings.Contains(u, "://") && at > 0 && colon > at
}

// sshAuth is the SSH authentication of a GitRepository, from its
// secretRef as source-controller reads it: identity (a PEM private key,
// OpenSSH format too), password (the key's passphrase, if any) and
// known_hosts (required: the server's host key is checked, never trusted
// on first use). The user is the URL's ("git" when it names none).
func sshAuth(u string, secret Secret) (transport.AuthMethod, error) {
	user := "git"
	if p, err := url.Parse(u); err == nil && p.User != nil && p.User.Username() != "" {
		user = p.User.Username()
	} else if at := strings.Index(u, "@"); at > 0 && !strings.Contains(u, "://") {
		user = u[:at]
	}
	if secret["identity"] == "" {
		return nil, fmt.Errorf("%w: SSH GitRepository %s: its secretRef needs identity (a private key) and known_hosts", ErrAuth, redact(u))
	}
	if strings.TrimSpace(secret["known_hosts"]) == "" {
		return nil, fmt.Errorf("%w: SSH GitRepository %s: its secretRef needs known_hosts (the server's host key; gitaso does not trust a host on first use)", ErrAuth, redact(u))
	}
	keys, err := gitssh.NewPublicKeys(user, []byte(secret["identity"]), secret["password"])
	if err != nil {
		return nil, fmt.Errorf("%w: SSH GitRepository %s: secretRef identity: %v", ErrAuth, redact(u), err)
	}
	cb, err := knownHostsCallback(secret["known_hosts"])
	if err != nil {
		return nil, fmt.Errorf("%w: SSH GitRepository %s: secretRef known_hosts: %v", ErrAuth, redact(u), err)
	}
	keys.HostKeyCallback = cb
	return keys, nil
}

// knownHostsCallback checks host keys against known_hosts text (hashed
// entries and markers as OpenSSH writes them: knownhosts reads a file).
func knownHostsCallback(text string) (ssh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "gitaso-known-hosts-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(text + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return knownhosts.New(f.Name())
}
