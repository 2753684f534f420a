package benchdata

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gitaso/gitaso/aso"
)

// ContributorRoleID is the GUID of Azure's built-in Contributor role.
const ContributorRoleID = "b24988ac-6180-42a0-ab88-20f7382dd24c"

// Kinds written by the generators, as "apiVersion Kind".
const (
	ResourceGroup        = "resources.azure.com/v1api20200601 ResourceGroup"
	UserAssignedIdentity = "managedidentity.azure.com/v1api20230131 UserAssignedIdentity"
	FederatedCredential  = "managedidentity.azure.com/v1api20230131 FederatedIdentityCredential"
	RoleAssignment       = "authorization.azure.com/v1api20220401 RoleAssignment"
	StorageAccount       = "storage.azure.com/v20230101 StorageAccount"
	BlobService          = "storage.azure.com/v20230101 StorageAccountsBlobService"
	BlobContainer        = "storage.azure.com/v20230101 StorageAccountsBlobServicesContainer"
	ServiceBusNamespace  = "servicebus.azure.com/v1api20240101 Namespace"
	ServiceBusQueue      = "servicebus.azure.com/v1api20240101 NamespacesQueue"
	ServiceBusTopic      = "servicebus.azure.com/v1api20240101 NamespacesTopic"
	ServiceBusSubscr     = "servicebus.azure.com/v1api20240101 NamespacesTopicsSubscription"
)

// ErrNotEmpty is returned when the target directory exists and is not empty.
var ErrNotEmpty = errors.New("target directory is not empty")

// Options configures GenerateWith.
type Options struct {
	Namespaces   int    // namespaces (teams), each in its own directory; ≥ 1
	PerNamespace int    // ASO resources per namespace; ≥ 1
	Subscription string // subscription ID written into ARM IDs (role definition IDs)
	MaxDepth     int    // longest owner chain, 1 (resource groups only) … 4 (RG → account → blob service → container)
	Location     string // Azure region of tracked resources
}

// DefaultOptions is the plan benchmark of issue 3: 10,000 resources in 500 namespaces, owner chains up to 4 deep.
func DefaultOptions() Options {
	return Options{
		Namespaces:   500,
		PerNamespace: 20,
		Subscription: "00000000-0000-0000-0000-000000000000",
		MaxDepth:     4,
		Location:     "westeurope",
	}
}

// Summary says what a generator wrote.
type Summary struct {
	Resources  int            // ASO resources
	Namespaces int            // distinct namespaces
	Files      int            // files written
	ByKind     map[string]int // "apiVersion Kind" → count
	ByDepth    map[int]int    // owner-chain depth (a resource group is 1) → count
}

// Generate writes the plan-benchmark repository into dir: namespaces directories team-0001…, each with
// perNamespace ASO resources (a resource group, a managed identity with a federated credential and a
// Contributor role assignment fed by the identity's exported principalId, a storage account with its blob
// service and containers, a Service Bus namespace with queues, topics and subscriptions), owner chains up to
// four deep. dir must be empty or absent.
func Generate(dir string, namespaces, perNamespace int, subscription string) error {
	o := DefaultOptions()
	o.Namespaces, o.PerNamespace, o.Subscription = namespaces, perNamespace, subscription
	_, err := GenerateWith(dir, o)
	return err
}

// slot is one resource to write in a namespace.
type slot struct {
	kind  string
	depth int
}

// coreSlots come first in every namespace, in dependency order; extraSlots repeat after them.
var (
	coreSlots = []slot{
		{ResourceGroup, 1},
		{UserAssignedIdentity, 2},
		{RoleAssignment, 2},
		{StorageAccount, 2},
		{ServiceBusNamespace, 2},
		{FederatedCredential, 3},
		{BlobService, 3},
	}
	extraSlots = []slot{
		{BlobContainer, 4},
		{ServiceBusQueue, 3},
		{ServiceBusTopic, 3},
		{ServiceBusSubscr, 4},
	}
	extraDepth2 = []slot{{UserAssignedIdentity, 2}}
	extraDepth1 = []slot{{ResourceGroup, 1}}
)

// Layout returns the kinds of the resources of one namespace, in the order they are generated.
func Layout(perNamespace, maxDepth int) []string {
	var core, extra []slot
	for _, s := range coreSlots {
		if s.depth <= maxDepth {
			core = append(core, s)
		}
	}
	for _, s := range extraSlots {
		if s.depth <= maxDepth {
			extra = append(extra, s)
		}
	}
	switch {
	case len(extra) > 0:
	case maxDepth >= 2:
		extra = extraDepth2
	default:
		extra = extraDepth1
	}
	out := make([]string, 0, perNamespace)
	for i := 0; i < perNamespace; i++ {
		if i < len(core) {
			out = append(out, core[i].kind)
		} else {
			out = append(out, extra[(i-len(core))%len(extra)].kind)
		}
	}
	return out
}

// GenerateWith writes a plan-benchmark repository as configured by o (see Generate).
func GenerateWith(dir string, o Options) (Summary, error) {
	if o.Namespaces < 1 || o.PerNamespace < 1 {
		return Summary{}, fmt.Errorf("benchdata: namespaces (%d) and resources per namespace (%d) must be at least 1", o.Namespaces, o.PerNamespace)
	}
	if o.MaxDepth < 1 || o.MaxDepth > 4 {
		return Summary{}, fmt.Errorf("benchdata: max depth %d is outside 1..4", o.MaxDepth)
	}
	if o.Subscription == "" || strings.ContainsAny(o.Subscription, "/ \n") {
		return Summary{}, fmt.Errorf("benchdata: invalid subscription ID %q", o.Subscription)
	}
	if o.Location == "" {
		o.Location = DefaultOptions().Location
	}
	if err := prepare(dir); err != nil {
		return Summary{}, err
	}
	sum := Summary{ByKind: map[string]int{}, ByDepth: map[int]int{}}
	layout := Layout(o.PerNamespace, o.MaxDepth)
	width := max(4, len(fmt.Sprint(o.Namespaces)))
	for i := 1; i <= o.Namespaces; i++ {
		ns := fmt.Sprintf("team-%0*d", width, i)
		g := &nsGen{o: o, ns: ns, compact: strings.ReplaceAll(ns, "-", ""), files: map[string]*bytes.Buffer{}}
		for _, kind := range layout {
			depth := g.add(kind)
			sum.ByKind[kind]++
			sum.ByDepth[depth]++
			sum.Resources++
		}
		n, err := g.write(filepath.Join(dir, ns))
		if err != nil {
			return sum, err
		}
		sum.Files += n
		sum.Namespaces++
	}
	return sum, nil
}

// nsGen builds the files of one namespace.
type nsGen struct {
	o       Options
	ns      string
	compact string // ns without dashes, for storage account names
	files   map[string]*bytes.Buffer
	count   map[string]int
	topic   string // last topic, owner of the next subscription
}

func (g *nsGen) file(name string) *bytes.Buffer {
	b, ok := g.files[name]
	if !ok {
		// The header comment belongs to the first document: a comment-only document before a "---"
		// is an empty document some YAML readers reject.
		b = &bytes.Buffer{}
		fmt.Fprintf(b, "# Generated by gitaso harness/benchdata for benchmarks; namespace %s.\n", g.ns)
		g.files[name] = b
	} else {
		b.WriteString("---\n")
	}
	return b
}

func (g *nsGen) next(kind string) int {
	if g.count == nil {
		g.count = map[string]int{}
	}
	g.count[kind]++
	return g.count[kind]
}

func (g *nsGen) header(b *bytes.Buffer, kind, name string, annotations ...string) {
	apiVersion, k, _ := strings.Cut(kind, " ")
	fmt.Fprintf(b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\n", apiVersion, k, name, g.ns)
	if len(annotations) > 0 {
		b.WriteString("  annotations:\n")
		for i := 0; i+1 < len(annotations); i += 2 {
			fmt.Fprintf(b, "    %s: %s\n", annotations[i], annotations[i+1])
		}
	}
	b.WriteString("spec:\n")
}

// suffix returns "" for the first resource of a kind and "-N" after, so that the core resources have plain names.
func suffix(n int) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf("-%d", n)
}

func (g *nsGen) rgName() string      { return g.ns + "-rg" }
func (g *nsGen) sbName() string      { return g.ns + "-bus" } // a Service Bus namespace may not end in -sb
func (g *nsGen) accountName() string { return g.compact + "sa" }
func (g *nsGen) blobName() string    { return g.accountName() + "-blob" }

// add writes one resource of kind and returns its owner-chain depth.
func (g *nsGen) add(kind string) int {
	n := g.next(kind)
	loc := g.o.Location
	switch kind {
	case ResourceGroup:
		b := g.file("resource-group.yaml")
		g.header(b, kind, g.rgName()+suffix(n))
		fmt.Fprintf(b, "  location: %s\n  tags:\n    team: %s\n    environment: bench\n", loc, g.ns)
		return 1
	case UserAssignedIdentity:
		b := g.file("identity.yaml")
		name := g.ns + "-identity" + suffix(n)
		g.header(b, kind, name)
		fmt.Fprintf(b, "  location: %s\n  owner:\n    name: %s\n  operatorSpec:\n    configMaps:\n", loc, g.rgName())
		for _, k := range []string{"principalId", "clientId", "tenantId"} {
			fmt.Fprintf(b, "      %s:\n        name: %s-settings\n        key: %s\n", k, name, k)
		}
		return 2
	case RoleAssignment:
		b := g.file("identity.yaml")
		g.header(b, kind, g.ns+"-rg-contributor"+suffix(n))
		fmt.Fprintf(b, "  owner:\n    group: resources.azure.com\n    kind: ResourceGroup\n    name: %s\n", g.rgName())
		fmt.Fprintf(b, "  principalIdFromConfig:\n    name: %s-identity-settings\n    key: principalId\n  principalType: ServicePrincipal\n", g.ns)
		fmt.Fprintf(b, "  roleDefinitionReference:\n    armId: /subscriptions/%s/providers/Microsoft.Authorization/roleDefinitions/%s\n", g.o.Subscription, ContributorRoleID)
		return 2
	case FederatedCredential:
		b := g.file("identity.yaml")
		g.header(b, kind, g.ns+"-identity-fic"+suffix(n))
		fmt.Fprintf(b, "  owner:\n    name: %s-identity\n  audiences:\n    - api://AzureADTokenExchange\n", g.ns)
		fmt.Fprintf(b, "  issuer: https://oidc.gitaso.local/bench/\n  subject: system:serviceaccount:%s:deployer%s\n", g.ns, suffix(n))
		return 3
	case StorageAccount:
		b := g.file("storage.yaml")
		g.header(b, kind, g.accountName()+strings.TrimPrefix(suffix(n), "-"))
		fmt.Fprintf(b, "  location: %s\n  owner:\n    name: %s\n  kind: StorageV2\n  sku:\n    name: Standard_LRS\n", loc, g.rgName())
		b.WriteString("  accessTier: Hot\n  allowBlobPublicAccess: false\n  minimumTlsVersion: TLS1_2\n  supportsHttpsTrafficOnly: true\n")
		return 2
	case BlobService:
		b := g.file("storage.yaml")
		g.header(b, kind, g.blobName(), aso.AnnotationReconcilePolicy, string(aso.ReconcilePolicyDetachOnDelete))
		fmt.Fprintf(b, "  owner:\n    name: %s\n  deleteRetentionPolicy:\n    enabled: true\n    days: 7\n", g.accountName())
		return 3
	case BlobContainer:
		b := g.file("storage.yaml")
		g.header(b, kind, fmt.Sprintf("%s-data-%02d", g.compact, n))
		fmt.Fprintf(b, "  owner:\n    name: %s\n  publicAccess: None\n", g.blobName())
		return 4
	case ServiceBusNamespace:
		b := g.file("servicebus.yaml")
		g.header(b, kind, g.sbName()+suffix(n))
		fmt.Fprintf(b, "  location: %s\n  owner:\n    name: %s\n  sku:\n    name: Standard\n  minimumTlsVersion: \"1.2\"\n", loc, g.rgName())
		return 2
	case ServiceBusQueue:
		b := g.file("servicebus.yaml")
		g.header(b, kind, fmt.Sprintf("%s-queue-%02d", g.ns, n))
		fmt.Fprintf(b, "  owner:\n    name: %s\n  lockDuration: PT1M\n  maxDeliveryCount: 10\n  deadLetteringOnMessageExpiration: true\n", g.sbName())
		return 3
	case ServiceBusTopic:
		b := g.file("servicebus.yaml")
		g.topic = fmt.Sprintf("%s-topic-%02d", g.ns, n)
		g.header(b, kind, g.topic)
		fmt.Fprintf(b, "  owner:\n    name: %s\n  defaultMessageTimeToLive: P7D\n", g.sbName())
		return 3
	case ServiceBusSubscr:
		b := g.file("servicebus.yaml")
		g.header(b, kind, fmt.Sprintf("%s-sub-%02d", g.ns, n))
		fmt.Fprintf(b, "  owner:\n    name: %s\n  maxDeliveryCount: 5\n", g.topic)
		return 4
	}
	panic("benchdata: unknown kind " + kind)
}

func (g *nsGen) write(dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("benchdata: %w", err)
	}
	names := make([]string, 0, len(g.files))
	for name := range g.files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), g.files[name].Bytes(), 0o644); err != nil {
			return 0, fmt.Errorf("benchdata: %w", err)
		}
	}
	return len(names), nil
}

// prepare creates dir, refusing a directory that already holds files.
func prepare(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("benchdata: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("benchdata: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("benchdata: %s: %w", dir, ErrNotEmpty)
	}
	return nil
}
