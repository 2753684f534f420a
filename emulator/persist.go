package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const snapshotVersion = 1

// snapshot is the JSON document of a data file. It holds secrets (client secrets, keys): the file is written 0600.
type snapshot struct {
	Version        int               `json:"version"`
	TenantID       string            `json:"tenantId"`
	SubscriptionID string            `json:"subscriptionId"`
	Subscriptions  []subscription    `json:"subscriptions"`
	CACertPEM      string            `json:"caCertPem"`
	CAKeyPEM       string            `json:"caKeyPem"`
	TokenKeyPEM    string            `json:"tokenKeyPem"`
	SAKeyPEM       string            `json:"serviceAccountKeyPem"`
	AdminToken     string            `json:"adminToken"`
	IdentityHeader string            `json:"identityHeader"`
	HostIdentity   principal         `json:"hostIdentity"`
	Principals     []principal       `json:"principals"`
	Resources      []snapResource    `json:"resources"`
	DeletedVaults  []deletedVault    `json:"deletedVaults,omitempty"`
	Latency        map[string]string `json:"latency,omitempty"`
}

type snapResource struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Location string          `json:"location,omitempty"`
	State    string          `json:"state,omitempty"`
	Body     json.RawMessage `json:"body"`
}

// persister writes snapshots shortly after changes (at most once per interval) and on Close.
type persister struct {
	e        *Emulator
	path     string
	interval time.Duration
	dirty    atomic.Bool
	mu       sync.Mutex // serialises writes
}

func newPersister(e *Emulator, path string, interval time.Duration) *persister {
	return &persister{e: e, path: path, interval: interval}
}

func (p *persister) markDirty() { p.dirty.Store(true) }

func (p *persister) run(done <-chan struct{}) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if p.dirty.Load() {
				if err := p.flush(); err != nil {
					p.e.log.Error("write emulator data file", "path", p.path, "err", err)
				}
			}
		}
	}
}

func (p *persister) flush() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dirty.Store(false)
	data, err := p.e.snapshotJSON()
	if err != nil {
		return err
	}
	return writeFileAtomic(p.path, data, 0o600)
}

// writeFileAtomic writes data to a temporary file in the same directory and renames it over path.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, perm)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

func (e *Emulator) snapshotJSON() ([]byte, error) {
	caKey, err := e.ca.keyPEM()
	if err != nil {
		return nil, err
	}
	tk, err := e.tokens.keyPEM()
	if err != nil {
		return nil, err
	}
	sk, err := e.saKeys.keyPEM()
	if err != nil {
		return nil, err
	}
	s := snapshot{
		Version: snapshotVersion, TenantID: e.tenantID, SubscriptionID: e.subscriptionID,
		CACertPEM: string(e.ca.certPEM), CAKeyPEM: string(caKey), TokenKeyPEM: string(tk), SAKeyPEM: string(sk),
		AdminToken: e.adminToken, IdentityHeader: e.identityHeader, Latency: map[string]string{},
	}
	e.latMu.RLock()
	for k, v := range e.latency {
		s.Latency[k] = v.String()
	}
	if e.defaultLatency > 0 {
		s.Latency["*"] = e.defaultLatency.String()
	}
	e.latMu.RUnlock()
	e.mu.RLock()
	s.HostIdentity = *e.hostMI
	for _, sub := range e.subs {
		s.Subscriptions = append(s.Subscriptions, *sub)
	}
	for _, p := range e.dir.byObject {
		if p.Kind == kindServicePrincipal {
			s.Principals = append(s.Principals, *p)
		}
	}
	for _, r := range e.store.all() {
		s.Resources = append(s.Resources, snapResource{ID: r.ID, Type: r.Type, Location: r.Location, State: r.state, Body: append(json.RawMessage(nil), r.body...)})
	}
	for _, d := range e.deletedVaults {
		s.DeletedVaults = append(s.DeletedVaults, *d)
	}
	e.mu.RUnlock()
	sort.Slice(s.DeletedVaults, func(i, j int) bool { return s.DeletedVaults[i].Name < s.DeletedVaults[j].Name })
	sort.Slice(s.Subscriptions, func(i, j int) bool { return s.Subscriptions[i].ID < s.Subscriptions[j].ID })
	sort.Slice(s.Principals, func(i, j int) bool { return s.Principals[i].ObjectID < s.Principals[j].ObjectID })
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode emulator snapshot: %w", err)
	}
	return b, nil
}

// load restores state from a data file; it reports false when the file does not exist.
func (e *Emulator) load(path string) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read emulator data file: %w", err)
	}
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return false, fmt.Errorf("decode emulator data file %s: %w", path, err)
	}
	if s.Version != snapshotVersion {
		return false, fmt.Errorf("emulator data file %s: unsupported version %d", path, s.Version)
	}
	if e.ca, err = loadCertAuthority([]byte(s.CACertPEM), []byte(s.CAKeyPEM)); err != nil {
		return false, fmt.Errorf("emulator data file %s: %w", path, err)
	}
	if e.tokens, err = loadSigner([]byte(s.TokenKeyPEM)); err != nil {
		return false, fmt.Errorf("emulator data file %s: %w", path, err)
	}
	if e.saKeys, err = loadSigner([]byte(s.SAKeyPEM)); err != nil {
		return false, fmt.Errorf("emulator data file %s: %w", path, err)
	}
	if s.TenantID != e.tenantID || s.SubscriptionID != e.subscriptionID {
		e.log.Warn("data file identifiers take precedence over options", "tenant", s.TenantID, "subscription", s.SubscriptionID)
	}
	e.tenantID, e.subscriptionID = s.TenantID, s.SubscriptionID
	e.adminToken, e.identityHeader = s.AdminToken, s.IdentityHeader
	for i := range s.Subscriptions {
		sub := s.Subscriptions[i]
		e.subs[strings.ToLower(sub.ID)] = &sub
	}
	hm := s.HostIdentity
	e.hostMI = &hm
	e.dir.add(e.hostMI)
	for i := range s.Principals {
		p := s.Principals[i]
		e.dir.add(&p)
	}
	for k, v := range s.Latency {
		if d, err := time.ParseDuration(v); err == nil {
			if k == "*" {
				e.defaultLatency = d
			} else {
				e.latency[k] = d
			}
		}
	}
	// Role definitions first, so that assignments index against them.
	sort.SliceStable(s.Resources, func(i, j int) bool {
		return strings.EqualFold(s.Resources[i].Type, "Microsoft.Authorization/roleDefinitions") && !strings.EqualFold(s.Resources[j].Type, "Microsoft.Authorization/roleDefinitions")
	})
	for i := range s.DeletedVaults {
		d := s.DeletedVaults[i]
		e.deletedVaults[strings.ToLower(d.Name)] = &d
	}
	var deleting []string
	for _, sr := range s.Resources {
		p := parseARMPath(sr.ID)
		if p.Kind != pathResource {
			return false, fmt.Errorf("emulator data file %s: invalid resource ID %q", path, sr.ID)
		}
		p.Type = sr.Type
		r := newResource(p, sr.Location, []byte(sr.Body))
		r.state = sr.State
		var body map[string]any
		if err := json.Unmarshal(sr.Body, &body); err != nil {
			return false, fmt.Errorf("emulator data file %s: resource %s: %w", path, sr.ID, err)
		}
		switch sr.State {
		case "Accepted", "Creating", "Updating":
			e.setState(r, "Succeeded") // operations do not survive a restart: they complete
		case "Deleting":
			deleting = append(deleting, r.key)
		}
		e.store.put(r)
		e.indexResource(r, body)
	}
	for _, k := range deleting {
		e.removeResource(k)
	}
	for _, r := range e.store.all() {
		e.createDefaultChildren(r, true) // written before the emulator created them
	}
	e.log.Info("emulator state loaded", "path", path, "resources", e.store.len())
	return true, nil
}
