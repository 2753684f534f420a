package gittest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"net"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
)

// SSHServer serves the bare repositories of a Server over SSH, in process:
// an "exec git-upload-pack '<repo>.git'" runs git-upload-pack on the
// repository, as a Git host does. Clients authenticate with the one
// public key given to NewSSHServer; other keys and passwords are refused.
type SSHServer struct {
	addr    string
	hostKey ssh.PublicKey
}

// NewSSHServer starts an SSH server for s's repositories accepting
// clientKey, closed when the test ends.
func NewSSHServer(t testing.TB, s *Server, clientKey ssh.PublicKey) *SSHServer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if string(k.Marshal()) == string(clientKey.Marshal()) {
			return &ssh.Permissions{}, nil
		}
		return nil, errors.New("key refused")
	}}
	cfg.AddHostKey(signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { serveSSH(c, cfg, s.root) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return &SSHServer{addr: l.Addr().String(), hostKey: signer.PublicKey()}
}

// URL is the ssh:// clone URL of a repository of the server.
func (s *SSHServer) URL(r *Repo) string { return "ssh://git@" + s.addr + "/" + r.name + ".git" }

// KnownHosts is the known_hosts line of the server's host key.
func (s *SSHServer) KnownHosts() string {
	host, port, _ := net.SplitHostPort(s.addr)
	return "[" + host + "]:" + port + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.hostKey))) + "\n"
}

func serveSSH(c net.Conn, cfg *ssh.ServerConfig, root string) {
	defer c.Close()
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			return
		}
		go serveSession(ch, creqs, root)
	}
}

// serveSession runs the session's exec request: git-upload-pack only.
func serveSession(ch ssh.Channel, reqs <-chan *ssh.Request, root string) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" || len(req.Payload) < 4 {
			_ = req.Reply(false, nil)
			continue
		}
		n := binary.BigEndian.Uint32(req.Payload)
		cmd := string(req.Payload[4:][:min(int(n), len(req.Payload)-4)])
		prog, arg, _ := strings.Cut(cmd, " ")
		if prog != "git-upload-pack" {
			_ = req.Reply(false, nil)
			return
		}
		repo := path.Clean("/" + strings.Trim(arg, "'\""))
		_ = req.Reply(true, nil)
		run := exec.Command("git-upload-pack", "--strict", filepath.Join(root, filepath.FromSlash(repo)))
		run.Stdin, run.Stdout, run.Stderr = ch, ch, ch.Stderr()
		status := uint32(0)
		if err := run.Run(); err != nil {
			status = 1
		}
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		return
	}
}

// NewClientKey returns a new ed25519 client key: its public half for
// NewSSHServer and its private half as the PEM a GitRepository secretRef's
// identity (or gitaso --git-ssh-key) holds.
func NewClientKey(t testing.TB) (ssh.PublicKey, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return sshPub, string(pem.EncodeToMemory(block))
}
