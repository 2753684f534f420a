package azure

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/aso"
)

// testCertPEM returns a self-signed certificate and its key as one PEM bundle.
func testCertPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gitaso-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) +
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}))
}

// clearCredentialEnv unsets every variable CredentialFromEnv reads.
func clearCredentialEnv(t *testing.T) {
	for _, k := range []string{KeySubscriptionID, KeyTenantID, KeyClientID, KeyClientSecret, KeyClientCertificate,
		KeyClientCertificatePassword, KeyUseWorkloadIdentityAuth, KeyUsePodIdentityAuth, EnvClientCertificatePath,
		EnvFederatedTokenFile, EnvAuthMode, EnvUseManagedIdentity, EnvIdentityEndpoint} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestCredentialFromEnv(t *testing.T) {
	certPEM := testCertPEM(t)
	certFile := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(certFile, []byte(certPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{KeySubscriptionID: testSub, KeyTenantID: testTenant, KeyClientID: testClient}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name     string
		env      map[string]string
		kind     string
		wantErr  error
		errMatch string
	}{
		{"secret", with(KeyClientSecret, testSecret), KindClientSecret, nil, ""},
		{"certificate content", with(KeyClientCertificate, certPEM), KindClientCertificate, nil, ""},
		{"certificate path", with(EnvClientCertificatePath, certFile), KindClientCertificate, nil, ""},
		{"bad certificate", with(KeyClientCertificate, "not a cert"), "", ErrInvalidCredential, KeyClientCertificate},
		{"workload identity flag", with(KeyUseWorkloadIdentityAuth, "true"), KindWorkloadIdentity, nil, ""},
		{"workload identity wins over secret", with(KeyUseWorkloadIdentityAuth, "true", KeyClientSecret, testSecret), KindWorkloadIdentity, nil, ""},
		{"federated token file", with(EnvFederatedTokenFile, "/tmp/tok"), KindWorkloadIdentity, nil, ""},
		{"auth mode", with(EnvAuthMode, "workloadidentity"), KindWorkloadIdentity, nil, ""},
		{"managed identity flag", with(KeyUsePodIdentityAuth, "true"), KindManagedIdentity, nil, ""},
		{"managed identity endpoint", map[string]string{KeySubscriptionID: testSub, EnvIdentityEndpoint: "https://127.0.0.1/msi"}, KindManagedIdentity, nil, ""},
		{"nothing to authenticate with", with(), "", ErrInvalidCredential, KeyClientSecret},
		{"no subscription", map[string]string{KeyClientSecret: testSecret}, "", ErrNoCredential, KeySubscriptionID},
		{"secret without tenant", map[string]string{KeySubscriptionID: testSub, KeyClientID: testClient, KeyClientSecret: testSecret}, "", ErrInvalidCredential, KeyTenantID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearCredentialEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := CredentialFromEnv()
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errMatch) {
					t.Fatalf("want %v mentioning %s, got %v", tc.wantErr, tc.errMatch, err)
				}
				if strings.Contains(err.Error(), testSecret) {
					t.Fatal("error leaks the secret")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Kind() != tc.kind || c.Scope != ScopeGlobal || c.Source != "env" || c.SubscriptionID != testSub {
				t.Fatalf("got %v", c)
			}
		})
	}
}

func TestCredentialFromSecret(t *testing.T) {
	certPEM := testCertPEM(t)
	tests := []struct {
		name, source string
		data         map[string]string
		kind, scope  string
		errMatch     string
	}{
		{"secret", "team-a/aso-credential", map[string]string{KeySubscriptionID: testSub, KeyTenantID: testTenant, KeyClientID: testClient, KeyClientSecret: testSecret}, KindClientSecret, ScopeNamespace, ""},
		{"certificate", "team-a/deployer", map[string]string{KeySubscriptionID: testSub, KeyTenantID: testTenant, KeyClientID: testClient, KeyClientCertificate: certPEM}, KindClientCertificate, ScopeResource, ""},
		{"workload identity: no secret material", "team-b/aso-credential", map[string]string{KeySubscriptionID: testSub, KeyTenantID: testTenant, KeyClientID: testClient}, KindWorkloadIdentity, ScopeNamespace, ""},
		{"workload identity flag", "team-b/aso-credential", map[string]string{KeySubscriptionID: testSub, KeyTenantID: testTenant, KeyClientID: testClient, KeyUseWorkloadIdentityAuth: "true"}, KindWorkloadIdentity, ScopeNamespace, ""},
		{"pod identity", "team-b/mi", map[string]string{KeySubscriptionID: testSub, KeyTenantID: testTenant, KeyClientID: testClient, KeyUsePodIdentityAuth: "true"}, KindManagedIdentity, ScopeResource, ""},
		{"missing keys", "team-c/aso-credential", map[string]string{KeyClientSecret: testSecret}, "", "", "AZURE_SUBSCRIPTION_ID, AZURE_TENANT_ID, AZURE_CLIENT_ID"},
		{"workload identity disabled without secret", "team-c/x", map[string]string{KeySubscriptionID: testSub, KeyTenantID: testTenant, KeyClientID: testClient, KeyUseWorkloadIdentityAuth: "false"}, "", "", KeyUseWorkloadIdentityAuth},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := CredentialFromSecret(tc.source, tc.data)
			if tc.errMatch != "" {
				if !errors.Is(err, ErrInvalidCredential) || !strings.Contains(err.Error(), tc.errMatch) || !strings.Contains(err.Error(), tc.source) {
					t.Fatalf("got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Kind() != tc.kind || c.Scope != tc.scope || c.Source != tc.source || c.ClientID != testClient {
				t.Fatalf("got %v", c)
			}
		})
	}
}

func TestCredentialNeverPrintsSecret(t *testing.T) {
	certPEM := testCertPEM(t)
	keyMarker := strings.Split(strings.Split(certPEM, "-----BEGIN PRIVATE KEY-----\n")[1], "\n")[0]
	sec := secretCred(t, "team-a/aso-credential")
	cert, err := CredentialFromSecret("team-a/cert", map[string]string{KeySubscriptionID: testSub, KeyTenantID: testTenant, KeyClientID: testClient, KeyClientCertificate: certPEM})
	if err != nil {
		t.Fatal(err)
	}
	type holder struct {
		cred  Credential // unexported field of a value type: fmt walks it by reflection
		Cred  *Credential
		inner *Credential
	}
	for _, c := range []*Credential{sec, cert} {
		var out bytes.Buffer
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			fmt.Fprintf(&out, verb+"\n", c)
			fmt.Fprintf(&out, verb+"\n", *c)
			fmt.Fprintf(&out, verb+"\n", holder{cred: *c, Cred: c, inner: c})
			fmt.Fprintf(&out, verb+"\n", []any{c, *c})
		}
		lg := slog.New(slog.NewJSONHandler(&out, nil))
		lg.Info("using", "credential", c, "value", *c)
		slog.New(slog.NewTextHandler(&out, nil)).Info("using", "credential", c)
		j, _ := json.Marshal(c)
		out.Write(j)
		j, _ = json.Marshal(holder{cred: *c, Cred: c})
		out.Write(j)
		s := out.String()
		for _, secret := range []string{testSecret, keyMarker, base64.StdEncoding.EncodeToString([]byte(testSecret))} {
			if strings.Contains(s, secret) {
				t.Fatalf("secret material printed:\n%s", s)
			}
		}
		if !strings.Contains(s, testClient) || !strings.Contains(s, c.Source) {
			t.Fatalf("non-secret identity missing from output:\n%s", s)
		}
	}
}

// TestDirSecretsCredentials reads credential Secrets kept out of Git from a
// credentials directory (.env and Secret manifests) and builds credentials
// from them; which Secret a resource uses is aso.ChooseCredential's rule.
func TestDirSecretsCredentials(t *testing.T) {
	dir := t.TempDir()
	mustWrite := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// team-a: namespace credential with a secret, from a .env file.
	mustWrite("team-a/aso-credential.env", "# team a\nexport AZURE_SUBSCRIPTION_ID="+testSub+"\nAZURE_TENANT_ID='"+testTenant+"'\n"+
		"AZURE_CLIENT_ID=\"team-a-client\"\nAZURE_CLIENT_SECRET="+testSecret+"\n")
	// team-a: per-resource credential as a Kubernetes Secret manifest with base64 data.
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	mustWrite("team-a/deployer.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: deployer\n  namespace: team-a\ndata:\n"+
		"  AZURE_SUBSCRIPTION_ID: "+b64("99999999-0000-0000-0000-000000000000")+"\n  AZURE_TENANT_ID: "+b64(testTenant)+"\n"+
		"  AZURE_CLIENT_ID: "+b64("deployer-client")+"\nstringData:\n  AZURE_CLIENT_SECRET: other\n")
	mustWrite("team-c/broken.yaml", "AZURE_CLIENT_SECRET: [not, a, string]\n")
	lookup := DirSecrets(dir)

	for _, tc := range []struct{ ns, name, client, sub string }{
		{"team-a", aso.NamespaceCredentialSecret, "team-a-client", testSub},
		{"team-a", "deployer", "deployer-client", "99999999-0000-0000-0000-000000000000"},
	} {
		data, ok, err := lookup(tc.ns, tc.name)
		if err != nil || !ok {
			t.Fatalf("%s/%s: ok=%v err=%v", tc.ns, tc.name, ok, err)
		}
		c, err := CredentialFromSecret(tc.ns+"/"+tc.name, data)
		if err != nil {
			t.Fatal(err)
		}
		if c.ClientID != tc.client || c.SubscriptionID != tc.sub || c.Kind() != KindClientSecret {
			t.Errorf("%s/%s: got %v", tc.ns, tc.name, c)
		}
	}
	if _, ok, err := lookup("team-b", aso.NamespaceCredentialSecret); ok || err != nil {
		t.Errorf("missing file: ok=%v err=%v", ok, err)
	}
	if _, ok, err := lookup("../team-a", "deployer"); ok || err != nil {
		t.Errorf("path outside the directory: ok=%v err=%v", ok, err)
	}
	if _, _, err := lookup("team-c", "broken"); err == nil || !strings.Contains(err.Error(), "AZURE_CLIENT_SECRET is not a string") {
		t.Errorf("broken file: %v", err)
	}
}

func TestParseEnvFileErrors(t *testing.T) {
	if _, err := parseEnvFile([]byte("AZURE_CLIENT_SECRET\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("got %v", err)
	}
	if _, err := parseSecretYAML([]byte("a: [1\nsecret-value-here")); err == nil || strings.Contains(err.Error(), "secret-value-here") {
		t.Errorf("yaml errors must not quote content: %v", err)
	}
}
