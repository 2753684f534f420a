package anchor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

// gitasoProcess is `gitaso serve` reading a directory, against an emulator.
type gitasoProcess struct {
	cmd  *exec.Cmd
	base string
	done chan struct{}
	err  error
}

// startGitaso starts `gitaso serve --dir dir` with the emulator's bootstrap principal as the global
// credential and waits until its API answers /readyz.
func startGitaso(ctx context.Context, log *slog.Logger, binary, dir, stateFile, cloudFile string, emu *emulator.Emulator,
	parallelism int, syncPeriod time.Duration, logFile string) (*gitasoProcess, error) {
	sp, ok := emu.ServicePrincipalByName(emulator.BootstrapPrincipalName)
	if !ok {
		var err error
		sp, err = emu.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: emulator.BootstrapPrincipalName},
			Roles: []emulator.RoleGrant{{Role: "Owner", Scope: "/subscriptions/" + emu.SubscriptionID()}}})
		if err != nil {
			return nil, fmt.Errorf("anchor: gitaso's principal: %w", err)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	listen := "127.0.0.1:" + strconv.Itoa(port)
	lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("anchor: %w", err)
	}
	cmd := exec.Command(binary, "serve", "--dir", dir, "--state", stateFile, "--listen", listen, "--cloud-config", cloudFile,
		"--interval", "24h", "--sync-period", syncPeriod.String(), "--parallelism", strconv.Itoa(parallelism),
		"--max-deletions", "0", "--max-deletion-fraction", "0", "--cache-dir", dir+".cache")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"AZURE_TENANT_ID=" + emu.TenantID(), "AZURE_SUBSCRIPTION_ID=" + emu.SubscriptionID(),
		"AZURE_CLIENT_ID=" + sp.ClientID, "AZURE_CLIENT_SECRET=" + sp.Secret, "NO_PROXY=*", "HTTPS_PROXY=", "HTTP_PROXY="}
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("anchor: start %s serve: %w", binary, err)
	}
	p := &gitasoProcess{cmd: cmd, base: "http://" + listen, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(p.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("anchor: gitaso serve exited (%v); see %s", p.err, logFile)
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), p.stop())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(fmt.Errorf("anchor: gitaso's API not up after 2m; see %s", logFile), p.stop())
		}
	}
	log.Info("gitaso serving", "pid", cmd.Process.Pid, "api", p.base)
	return p, nil
}

// sync asks for a reconcile now (POST /api/v1/sync).
func (p *gitasoProcess) sync(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/api/v1/sync", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("anchor: gitaso sync: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("anchor: gitaso sync: %s: %s", resp.Status, b)
	}
	return nil
}

// summary is GET /api/v1/summary.
type summary struct {
	Total int            `json:"total"`
	Ready map[string]int `json:"ready"`
}

func (p *gitasoProcess) summary(ctx context.Context) (summary, error) {
	var s summary
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/api/v1/summary", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, fmt.Errorf("anchor: gitaso summary: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return s, fmt.Errorf("anchor: gitaso summary: %w", err)
	}
	return s, nil
}

// waitReady polls the API every interval until want resources are Ready.
func (p *gitasoProcess) waitReady(ctx context.Context, want int, interval time.Duration, progress func(ready, total int)) error {
	last := -1
	for {
		s, err := p.summary(ctx)
		if err == nil {
			if r := s.Ready["True"]; r != last {
				last = r
				if progress != nil {
					progress(r, want)
				}
			}
			if s.Ready["True"] >= want {
				return nil
			}
		}
		if msg := p.refused(ctx); msg != "" {
			return fmt.Errorf("anchor: gitaso refused the revision: %s", msg)
		}
		select {
		case <-p.done:
			return fmt.Errorf("anchor: gitaso exited (%v)", p.err)
		case <-ctx.Done():
			return fmt.Errorf("anchor: %d of %d gitaso resources Ready (%v); summary %+v", last, want, ctx.Err(), s)
		case <-time.After(interval):
		}
	}
}

// notReady lists the resources whose Ready is not True, "ns/Kind/name: status reason: message".
func (p *gitasoProcess) notReady(ctx context.Context) []string {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/api/v1/resources", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return []string{err.Error()}
	}
	defer resp.Body.Close()
	var items struct {
		Items []struct {
			Namespace, Kind, Name string
			Ready                 struct{ Status, Reason, Message string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&items); err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, it := range items.Items {
		if it.Ready.Status != "True" {
			out = append(out, fmt.Sprintf("%s %s/%s: %s %s: %s", it.Kind, it.Namespace, it.Name, it.Ready.Status, it.Ready.Reason, it.Ready.Message))
		}
	}
	return out
}

func (p *gitasoProcess) usage() (ProcUsage, error) { return readUsage("gitaso", p.cmd.Process.Pid) }

func (p *gitasoProcess) stop() error { return stopProcess(p.cmd, p.done) }

// refused returns the error of the latest run when gitaso refused its revision ("" otherwise).
func (p *gitasoProcess) refused(ctx context.Context) string {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/api/v1/runs?limit=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var runs struct {
		Items []struct{ Outcome, Error string }
	}
	if json.NewDecoder(resp.Body).Decode(&runs) != nil || len(runs.Items) == 0 || runs.Items[0].Outcome != "refused" {
		return ""
	}
	return runs.Items[0].Error
}

// stopProcess stops a process started by the harness: SIGTERM, then SIGKILL after 20 s. done is closed when its
// Wait returns.
func stopProcess(cmd *exec.Cmd, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}
