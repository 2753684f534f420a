package charts

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/gitaso/gitaso/source"
)

// isSSHURL reports whether a GitRepository's spec.url is an SSH address.
func isSSHURL(u string) bool { return source.IsSSHURL(u) }

// sshAuth is the SSH authentication of a GitRepository, from its secretRef
// as source-controller reads it (source.SSHAuth): identity, password (the
// key's passphrase) and known_hosts. Errors wrap ErrAuth.
func sshAuth(u string, secret Secret) (transport.AuthMethod, error) {
	auth, err := source.SSHAuth(u, source.SSHKey{Identity: []byte(secret["identity"]), Passphrase: secret["password"], KnownHosts: secret["known_hosts"]})
	if errors.Is(err, source.ErrSSHKey) {
		msg := strings.Replace(err.Error(), source.ErrSSHKey.Error()+": SSH Git address", "SSH GitRepository", 1)
		msg = strings.Replace(msg, ": needs identity", ": its secretRef needs identity", 1)
		msg = strings.Replace(msg, ": needs known_hosts", ": its secretRef needs known_hosts", 1)
		msg = strings.Replace(msg, ": identity:", ": secretRef identity:", 1)
		msg = strings.Replace(msg, ": known_hosts:", ": secretRef known_hosts:", 1)
		return nil, fmt.Errorf("%w: %s", ErrAuth, msg)
	}
	return auth, err
}
