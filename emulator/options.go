package emulator

import (
	"log/slog"
	"strings"
	"time"
)

// Default identifiers of the tenant and subscription that exist when the emulator starts (unless overridden).
const (
	DefaultTenantID       = "72f988bf-0000-4000-8000-00000000e001"
	DefaultSubscriptionID = "5b4e6ad4-0000-4000-8000-00000000e002"
	// ARMAudience is the audience ARM tokens carry, exactly as for public Azure.
	ARMAudience = "https://management.azure.com"
)

// Option configures an Emulator.
type Option func(*options)

type options struct {
	addr           string
	tenantID       string
	subscriptionID string
	logger         *slog.Logger
	principals     []PrincipalSpec
	latency        map[string]time.Duration
	defaultLatency time.Duration
	throttleScale  float64
	faults         Faults
	dataFile       string
	tokenLifetime  time.Duration
	pollInterval   time.Duration
	hostnames      []string
	logSize        int
	seed           uint64
	flushInterval  time.Duration
	registries     []string
	writeLog       func(WriteRecord) // writelog.go
	users          []User            // signin.go
}

func defaultOptions() options {
	return options{
		addr:           "127.0.0.1:0",
		tenantID:       DefaultTenantID,
		subscriptionID: DefaultSubscriptionID,
		logger:         slog.New(slog.DiscardHandler),
		latency:        map[string]time.Duration{},
		throttleScale:  1,
		tokenLifetime:  time.Hour,
		pollInterval:   25 * time.Millisecond,
		logSize:        10000,
		flushInterval:  250 * time.Millisecond,
	}
}

// WithAddr sets the listen address (default "127.0.0.1:0", a free loopback port).
func WithAddr(addr string) Option { return func(o *options) { o.addr = addr } }

// WithTenantID sets the tenant's ID (default DefaultTenantID).
func WithTenantID(id string) Option { return func(o *options) { o.tenantID = strings.ToLower(id) } }

// WithSubscriptionID sets the default subscription's ID (default DefaultSubscriptionID).
func WithSubscriptionID(id string) Option {
	return func(o *options) { o.subscriptionID = strings.ToLower(id) }
}

// WithLogger sets the logger (default: discard). Secrets are never logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// RoleGrant is a role (by name, e.g. "Owner", or role definition GUID) granted at a scope. An empty scope means the
// default subscription.
type RoleGrant struct {
	Role  string
	Scope string
}

// PrincipalSpec describes a service principal created at start-up. Empty IDs and secret are generated.
type PrincipalSpec struct {
	ServicePrincipal
	Roles []RoleGrant
}

// WithPrincipals pre-creates service principals and their role assignments.
func WithPrincipals(specs ...PrincipalSpec) Option {
	return func(o *options) { o.principals = append(o.principals, specs...) }
}

// WithLatency sets how long long-running operations on an ARM type (case-insensitive, e.g.
// "Microsoft.Storage/storageAccounts") take before they reach a terminal state.
func WithLatency(armType string, d time.Duration) Option {
	return func(o *options) { o.latency[strings.ToLower(armType)] = d }
}

// WithDefaultLatency sets the LRO duration for types without their own latency (default 0: an operation is
// complete at the first poll, but still goes through the LRO protocol).
func WithDefaultLatency(d time.Duration) Option { return func(o *options) { o.defaultLatency = d } }

// WithThrottleScale multiplies ARM's throttling bucket sizes and refill rates (default 1: reads 250 refilling
// 25/s, writes and deletes 200 refilling 10/s). 0 disables throttling.
func WithThrottleScale(f float64) Option { return func(o *options) { o.throttleScale = f } }

// WithoutThrottling disables throttling (same as WithThrottleScale(0)).
func WithoutThrottling() Option { return WithThrottleScale(0) }

// WithFaults sets the initial fault injection settings.
func WithFaults(f Faults) Option { return func(o *options) { o.faults = f } }

// WithDataFile keeps the emulator's state (resources, principals, keys and CA) in a JSON file: it is loaded at
// start when present and rewritten atomically shortly after each change and on Close.
func WithDataFile(path string) Option { return func(o *options) { o.dataFile = path } }

// WithTokenLifetime sets the lifetime of issued access tokens (default 1h).
func WithTokenLifetime(d time.Duration) Option { return func(o *options) { o.tokenLifetime = d } }

// WithPollInterval sets the polling hint sent as retry-after-ms on in-progress operations (default 25ms), so that
// azcore pollers do not wait their one-second minimum against the emulator. Retry-After (seconds) is sent too.
func WithPollInterval(d time.Duration) Option { return func(o *options) { o.pollInterval = d } }

// WithHostnames adds names or IPs to the serving certificate (loopback is always included).
func WithHostnames(hosts ...string) Option {
	return func(o *options) { o.hostnames = append(o.hostnames, hosts...) }
}

// WithRequestLogSize sets how many recent requests RequestLog keeps (default 10000).
func WithRequestLogSize(n int) Option { return func(o *options) { o.logSize = n } }

// WithSeed makes fault injection deterministic.
func WithSeed(seed uint64) Option { return func(o *options) { o.seed = seed } }

// WithRegistry serves an Azure Container Registry data plane named name (5 to 50 letters and digits) on its own
// loopback HTTPS listener, login server RegistryHost(name): an OCI registry behind ACR's token exchange and RBAC
// (see acr.go). Repeat it for more registries.
func WithRegistry(name string) Option {
	return func(o *options) { o.registries = append(o.registries, name) }
}
