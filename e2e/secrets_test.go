package e2e_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/syncbuf"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// syncBuffer is a log sink safe for concurrent writers and a reader.
type syncBuffer = syncbuf.Buffer

// TestSecretNeverLeaksThroughARMErrors: when ARM echoes a secret value in an
// error message (some resource providers quote the invalid value), the value
// reaches neither the log, nor the state file, nor the stored plan.
func TestSecretNeverLeaksThroughARMErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	const password = "Tr0ub4dor&3-admin-pw"
	env := emutest.New(t)
	env.Emu.SetFaults(emulator.Faults{ProvisioningFailures: []emulator.ProvisioningFailure{{
		Match: "/flexibleServers/pg", Code: "PasswordNotComplex",
		Message: "The password '" + password + "' does not meet the complexity requirements.",
	}}})
	dir := t.TempDir()
	manifests := `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: db-rg, namespace: db}
spec: {location: westeurope}
---
apiVersion: v1
kind: Secret
metadata: {name: admin, namespace: db}
stringData: {password: "` + password + `"}
---
apiVersion: dbforpostgresql.azure.com/v1api20240801
kind: FlexibleServer
metadata: {name: pg, namespace: db}
spec:
  location: westeurope
  owner: {name: db-rg}
  version: "16"
  administratorLogin: pgadmin
  administratorLoginPassword: {name: admin, key: password}
`
	if err := os.WriteFile(filepath.Join(dir, "db.yaml"), []byte(manifests), 0o644); err != nil {
		t.Fatal(err)
	}
	dbFile := filepath.Join(t.TempDir(), "state.db")
	db, err := state.Open(dbFile)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logs syncBuffer
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	rec := reconcile.New(source.NewDir(dir, ""), db, env.Clients, cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if _, err := rec.Once(context.Background(), reconcile.Options{Trigger: "test"}); err != nil {
		t.Fatal(err)
	}
	r, _, _ := db.Resource(record.ResourceKey("db", "dbforpostgresql.azure.com", "FlexibleServer", "pg"))
	if r.Ready.Reason != "PasswordNotComplex" || !strings.Contains(r.Ready.Message, "(sensitive value)") {
		t.Errorf("Ready %+v: want ARM's code with the value redacted", r.Ready)
	}
	if strings.Contains(r.Ready.Message, password) {
		t.Errorf("password in the Ready message: %s", r.Ready.Message)
	}
	if !strings.Contains(logs.String(), "PasswordNotComplex") {
		t.Fatalf("the failure was not logged:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("password in the log:\n%s", logs.String())
	}
	plan, _ := db.Plan()
	if bytes.Contains(plan, []byte(password)) {
		t.Error("password in the stored plan")
	}
	_ = db.Close()
	raw, err := os.ReadFile(dbFile)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(password)) {
		t.Error("password in the state file")
	}
}
