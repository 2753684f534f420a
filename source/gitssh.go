package source

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// IsSSHURL reports whether a Git URL (a GitRepository's spec.url, --repo)
// is an SSH address: ssh://[user@]host[:port]/path, or the scp-like
// user@host:path.
func IsSSHURL(u string) bool {
	if strings.HasPrefix(u, "ssh://") {
		return true
	}
	at, colon := strings.Index(u, "@"), strings.Index(u, ":")
	return !strings.Contains(u, "://") && at > 0 && colon > at
}

// SSHKey is what an SSH Git address needs, as Flux's source-controller
// reads it from a GitRepository's secretRef: identity (a PEM private key,
// OpenSSH format too), password (the key's passphrase, if any) and
// known_hosts (required: the server's host key is checked, never trusted on
// first use).
type SSHKey struct {
	Identity   []byte
	Passphrase string
	KnownHosts string
}

// ErrSSHKey is wrapped by SSHAuth's errors: the key or known_hosts is
// missing or cannot be read.
var ErrSSHKey = errors.New("SSH key")

// SSHAuth is the SSH authentication of a Git address with key. The user is
// the URL's ("git" when it names none). Errors name the URL without
// credentials and wrap ErrSSHKey.
func SSHAuth(u string, key SSHKey) (transport.AuthMethod, error) {
	user := "git"
	if p, err := url.Parse(u); err == nil && p.User != nil && p.User.Username() != "" {
		user = p.User.Username()
	} else if at := strings.Index(u, "@"); at > 0 && !strings.Contains(u, "://") {
		user = u[:at]
	}
	if len(key.Identity) == 0 {
		return nil, fmt.Errorf("%w: SSH Git address %s: needs identity (a private key) and known_hosts", ErrSSHKey, redactURL(u))
	}
	if strings.TrimSpace(key.KnownHosts) == "" {
		return nil, fmt.Errorf("%w: SSH Git address %s: needs known_hosts (the server's host key; gitaso does not trust a host on first use)", ErrSSHKey, redactURL(u))
	}
	keys, err := gitssh.NewPublicKeys(user, key.Identity, key.Passphrase)
	if err != nil {
		return nil, fmt.Errorf("%w: SSH Git address %s: identity: %v", ErrSSHKey, redactURL(u), err)
	}
	cb, err := knownHostsCallback(key.KnownHosts)
	if err != nil {
		return nil, fmt.Errorf("%w: SSH Git address %s: known_hosts: %v", ErrSSHKey, redactURL(u), err)
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
