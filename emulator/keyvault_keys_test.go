package emulator_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azkeys"

	"github.com/gitaso/gitaso/emulator"
)

// kvClient is the Azure SDK's own Key Vault keys client for a vault of the emulator: it takes the 401 challenge,
// checks its resource against the vault host and asks the emulator's Entra ID for a Key Vault token.
func kvClient(t *testing.T, e *emulator.Emulator, vault string, cred azcore.TokenCredential) *azkeys.Client {
	t.Helper()
	c, err := azkeys.NewClient(e.KeyVaultURL(vault), cred, &azkeys.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: e.KeyVaultHTTPClient(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// putVault creates a vault through ARM, with RBAC or with the given access policies.
func putVault(t *testing.T, c *client, e *emulator.Emulator, rg, name string, rbac bool, policies []any) string {
	t.Helper()
	putRG(t, c, rg)
	id := rg + "/providers/Microsoft.KeyVault/vaults/" + name
	mustPut(t, c, id, kvAPI, map[string]any{"location": "westeurope", "properties": map[string]any{
		"tenantId": e.TenantID(), "sku": map[string]any{"family": "A", "name": "standard"},
		"accessPolicies": policies, "enableRbacAuthorization": rbac}})
	return id
}

func responseCode(err error) (int, string) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode, re.ErrorCode
	}
	return 0, ""
}

// TestKeyVaultKeysRBAC: azkeys creates a key as a Crypto Officer, a Crypto User encrypts, decrypts, wraps and
// unwraps with RSA-OAEP-256 and RSA-OAEP; a principal without a role gets Key Vault's 403; the emulator's results
// agree with RSA done locally on the public key it returns.
func TestKeyVaultKeysRBAC(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	vaultID := putVault(t, c, e, rgPath(e, "rg-kv"), "sopskv", true, []any{})

	officer, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "officer"},
		Roles: []emulator.RoleGrant{{Role: "Key Vault Crypto Officer", Scope: vaultID}}})
	if err != nil {
		t.Fatal(err)
	}
	user, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "user"},
		Roles: []emulator.RoleGrant{{Role: "Key Vault Crypto User", Scope: vaultID}}})
	if err != nil {
		t.Fatal(err)
	}
	nobody, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "nobody"},
		Roles: []emulator.RoleGrant{{Role: "Reader", Scope: vaultID}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	oc := kvClient(t, e, "sopskv", secretCred(t, e, officer))
	created, err := oc.CreateKey(ctx, "sops", azkeys.CreateKeyParameters{Kty: to.Ptr(azkeys.KeyTypeRSA), KeySize: to.Ptr(int32(2048))}, nil)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	kid := *created.Key.KID
	if !strings.HasPrefix(string(kid), "https://sopskv.vault.azure.net/keys/sops/") || kid.Version() == "" {
		t.Fatalf("kid = %s", kid)
	}
	pub := &rsa.PublicKey{N: new(big.Int).SetBytes(created.Key.N), E: int(new(big.Int).SetBytes(created.Key.E).Int64())}

	uc := kvClient(t, e, "sopskv", secretCred(t, e, user))
	if _, err := uc.CreateKey(ctx, "other", azkeys.CreateKeyParameters{Kty: to.Ptr(azkeys.KeyTypeRSA)}, nil); err == nil {
		t.Error("a Crypto User created a key")
	} else if st, code := responseCode(err); st != http.StatusForbidden || code != "Forbidden" {
		t.Errorf("Crypto User create: %d %s (%v)", st, code, err)
	}
	dataKey := []byte("0123456789abcdef0123456789abcdef")
	for _, alg := range []azkeys.EncryptionAlgorithm{azkeys.EncryptionAlgorithmRSAOAEP256, azkeys.EncryptionAlgorithmRSAOAEP} {
		enc, err := uc.Encrypt(ctx, "sops", kid.Version(), azkeys.KeyOperationParameters{Algorithm: to.Ptr(alg), Value: dataKey}, nil)
		if err != nil {
			t.Fatalf("%s encrypt: %v", alg, err)
		}
		dec, err := uc.Decrypt(ctx, "sops", kid.Version(), azkeys.KeyOperationParameters{Algorithm: to.Ptr(alg), Value: enc.Result}, nil)
		if err != nil || !bytes.Equal(dec.Result, dataKey) {
			t.Fatalf("%s decrypt: %v", alg, err)
		}
		// wrap/unwrap is the same RSA operation: what encrypt made unwraps, and the other way round.
		unw, err := uc.UnwrapKey(ctx, "sops", "", azkeys.KeyOperationParameters{Algorithm: to.Ptr(alg), Value: enc.Result}, nil)
		if err != nil || !bytes.Equal(unw.Result, dataKey) {
			t.Fatalf("%s unwrap (latest version): %v", alg, err)
		}
		wr, err := uc.WrapKey(ctx, "sops", kid.Version(), azkeys.KeyOperationParameters{Algorithm: to.Ptr(alg), Value: dataKey}, nil)
		if err != nil {
			t.Fatalf("%s wrap: %v", alg, err)
		}
		if dec, err := uc.Decrypt(ctx, "sops", kid.Version(), azkeys.KeyOperationParameters{Algorithm: to.Ptr(alg), Value: wr.Result}, nil); err != nil || !bytes.Equal(dec.Result, dataKey) {
			t.Fatalf("%s decrypt of wrapped: %v", alg, err)
		}
	}
	// Encrypted locally with the public key Key Vault returned, decrypted by the emulator.
	local, err := rsa.EncryptOAEP(sha256.New(), rand.Reader, pub, dataKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if dec, err := uc.Decrypt(ctx, "sops", kid.Version(), azkeys.KeyOperationParameters{Algorithm: to.Ptr(azkeys.EncryptionAlgorithmRSAOAEP256), Value: local}, nil); err != nil || !bytes.Equal(dec.Result, dataKey) {
		t.Fatalf("decrypt of a local encryption: %v", err)
	}
	// A tampered ciphertext, an unknown version, an unknown key.
	local[10] ^= 1
	if _, err := uc.Decrypt(ctx, "sops", kid.Version(), azkeys.KeyOperationParameters{Algorithm: to.Ptr(azkeys.EncryptionAlgorithmRSAOAEP256), Value: local}, nil); err == nil {
		t.Error("a tampered ciphertext decrypted")
	}
	if _, err := uc.Decrypt(ctx, "sops", "00000000000000000000000000000000", azkeys.KeyOperationParameters{Algorithm: to.Ptr(azkeys.EncryptionAlgorithmRSAOAEP256), Value: local}, nil); err == nil {
		t.Error("an unknown version decrypted")
	} else if st, code := responseCode(err); st != http.StatusNotFound || code != "KeyNotFound" {
		t.Errorf("unknown version: %d %s", st, code)
	}
	if _, err := uc.GetKey(ctx, "nokey", "", nil); err == nil {
		t.Error("an unknown key was found")
	}
	if got, err := uc.GetKey(ctx, "sops", "", nil); err != nil || *got.Key.KID != kid {
		t.Errorf("get key: %v", err)
	}

	// No role on the vault's keys: Key Vault's 403 naming the action.
	nc := kvClient(t, e, "sopskv", secretCred(t, e, nobody))
	_, err = nc.Decrypt(ctx, "sops", kid.Version(), azkeys.KeyOperationParameters{Algorithm: to.Ptr(azkeys.EncryptionAlgorithmRSAOAEP256), Value: local}, nil)
	if st, code := responseCode(err); st != http.StatusForbidden || code != "Forbidden" || !strings.Contains(err.Error(), "Microsoft.KeyVault/vaults/keys/decrypt/action") {
		t.Errorf("no role: %d %s %v", st, code, err)
	}
	// A vault that does not exist.
	if _, err := kvClient(t, e, "novault", secretCred(t, e, user)).GetKey(ctx, "sops", "", nil); err == nil {
		t.Error("a key of a vault that does not exist was found")
	}
}

// TestKeyVaultKeysChallenge: the raw protocol. Without a token Key Vault answers 401 with its challenge; a token
// for ARM's audience is refused; an access-policy vault grants exactly the key permissions of the caller's policy.
func TestKeyVaultKeysChallenge(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	p, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "policy"}})
	if err != nil {
		t.Fatal(err)
	}
	putVault(t, c, e, rgPath(e, "rg-ap"), "apkv", false, []any{map[string]any{
		"tenantId": e.TenantID(), "objectId": p.ObjectID,
		"permissions": map[string]any{"keys": []any{"get", "create", "encrypt", "unwrapKey"}}}})
	hc := e.KeyVaultHTTPClient()
	req, _ := http.NewRequest(http.MethodGet, e.KeyVaultURL("apkv")+"/keys/k?api-version=7.4", nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := `Bearer authorization="` + e.AuthorityHost() + e.TenantID() + `", resource="https://vault.azure.net"`
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want {
		t.Fatalf("no token: %d %q, want 401 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}
	armTok, err := e.IssueAccessToken(p.ObjectID, emulator.ARMAudience, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+armTok)
	if resp, err = hc.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("ARM token: %d, want 401", resp.StatusCode)
	}

	ctx := context.Background()
	kc := kvClient(t, e, "apkv", secretCred(t, e, p))
	created, err := kc.CreateKey(ctx, "k", azkeys.CreateKeyParameters{Kty: to.Ptr(azkeys.KeyTypeRSA)}, nil)
	if err != nil {
		t.Fatalf("create with the create permission: %v", err)
	}
	v := created.Key.KID.Version()
	enc, err := kc.Encrypt(ctx, "k", v, azkeys.KeyOperationParameters{Algorithm: to.Ptr(azkeys.EncryptionAlgorithmRSAOAEP256), Value: []byte("k")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kc.UnwrapKey(ctx, "k", v, azkeys.KeyOperationParameters{Algorithm: to.Ptr(azkeys.EncryptionAlgorithmRSAOAEP256), Value: enc.Result}, nil); err != nil {
		t.Errorf("unwrap with the unwrapKey permission: %v", err)
	}
	_, err = kc.Decrypt(ctx, "k", v, azkeys.KeyOperationParameters{Algorithm: to.Ptr(azkeys.EncryptionAlgorithmRSAOAEP256), Value: enc.Result}, nil)
	if st, _ := responseCode(err); st != http.StatusForbidden || !strings.Contains(err.Error(), "does not have keys decrypt permission") {
		t.Errorf("decrypt without the decrypt permission: %v", err)
	}
}
