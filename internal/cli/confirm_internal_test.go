package cli

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/emutest"
)

// On a terminal, apply shows a plan that deletes and asks; anything but
// "yes" applies nothing, "yes" applies exactly that plan, --auto-approve
// does not ask; a plan without deletions is not asked about.
func TestApplyAsksBeforeDeleting(t *testing.T) {
	em := emutest.New(t)
	t.Setenv("GITASO_CLOUD_CONFIG", em.CloudFile)
	t.Setenv("AZURE_TENANT_ID", em.Emu.TenantID())
	t.Setenv("AZURE_CLIENT_ID", em.Principal.ClientID)
	t.Setenv("AZURE_CLIENT_SECRET", em.Principal.Secret)
	t.Setenv("AZURE_SUBSCRIPTION_ID", em.Sub)
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	rgYAML := func(name string) string {
		return "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: " + name + "\n  namespace: n\nspec:\n  location: westeurope\n"
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	terminal := true
	oldTerm, oldIn := stdinIsTerminal, stdin
	t.Cleanup(func() { stdinIsTerminal, stdin = oldTerm, oldIn })
	stdinIsTerminal = func() bool { return terminal }
	apply := func(answer string, extra ...string) (string, error) {
		t.Helper()
		stdin = strings.NewReader(answer)
		var out, errb bytes.Buffer
		args := append([]string{"apply", "--dir", repo, "--state", filepath.Join(dir, "s.db")}, extra...)
		err := Run(context.Background(), args, &out, &errb)
		return out.String() + errb.String(), err
	}
	exists := func(name string) bool {
		_, err := em.Client.Get(context.Background(), "/subscriptions/"+em.Sub+"/resourceGroups/"+name, "2020-06-01")
		return err == nil
	}

	write("a.yaml", rgYAML("rg-a"))
	write("b.yaml", rgYAML("rg-b"))
	if out, err := apply(""); err != nil || strings.Contains(out, "Do you want") {
		t.Fatalf("creating asks or fails: %v\n%s", err, out)
	}
	os.Remove(filepath.Join(repo, "b.yaml"))
	out, err := apply("no\n")
	if !errors.Is(err, errDeclined) || !strings.Contains(out, "This deletes 1 resource from Azure") || !exists("rg-b") {
		t.Fatalf("declined: err %v, rg-b exists %v\n%s", err, exists("rg-b"), out)
	}
	out, err = apply("yes\n")
	if err != nil || exists("rg-b") || !exists("rg-a") || strings.Count(out, "will be deleted") != 1 {
		t.Fatalf("confirmed: err %v, rg-b exists %v\n%s", err, exists("rg-b"), out)
	}
	write("c.yaml", rgYAML("rg-c"))
	os.Remove(filepath.Join(repo, "a.yaml"))
	if out, err := apply("", "--auto-approve"); err != nil || strings.Contains(out, "Do you want") || exists("rg-a") {
		t.Fatalf("--auto-approve: %v\n%s", err, out)
	}
	terminal = false
	write("a.yaml", rgYAML("rg-a"))
	os.Remove(filepath.Join(repo, "c.yaml"))
	if out, err := apply(""); err != nil || strings.Contains(out, "Do you want") || exists("rg-c") {
		t.Fatalf("not a terminal: %v\n%s", err, out)
	}
}

// A wrong endpoint fails at once, naming it, before any state file is made.
func TestApplyUnreachableAzureFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "https://" + l.Addr().String() + "/"
	l.Close()
	t.Setenv("GITASO_ARM_ENDPOINT", dead)
	t.Setenv("AZURE_AUTHORITY_HOST", dead)
	t.Setenv("AZURE_TENANT_ID", "72f988bf-0000-4000-8000-00000000e001")
	t.Setenv("AZURE_CLIENT_ID", "6fda62a0-e1df-4c02-b666-5ce31b1ce7c1")
	t.Setenv("AZURE_CLIENT_SECRET", "not-a-secret")
	t.Setenv("AZURE_SUBSCRIPTION_ID", "5b4e6ad4-0000-4000-8000-00000000e002")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rg.yaml"), []byte("apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\nspec:\n  location: westeurope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"apply", "plan"} {
		state := filepath.Join(dir, cmd+".db")
		var out, errb bytes.Buffer
		err := Run(context.Background(), []string{cmd, "--dir", dir, "--state", state}, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), "cannot reach Azure Resource Manager at "+dead) ||
			!strings.Contains(err.Error(), "connection refused") {
			t.Errorf("%s: %v", cmd, err)
		}
		if _, serr := os.Stat(state); serr == nil {
			t.Errorf("%s left a state file behind", cmd)
		}
	}
}
