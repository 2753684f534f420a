package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/metrics"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/source/render"
	"github.com/gitaso/gitaso/state"
)

// Version is set at build time with -ldflags "-X github.com/gitaso/gitaso/internal/cli.Version=...".
var Version = "dev"

// ExitError carries a process exit code (2: plan has changes).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// settings are the options shared by serve, plan, apply and validate.
type settings struct {
	// reach: check that Azure answers before anything else (plan with
	// refresh, apply), so that a wrong endpoint fails at once, naming it.
	reach bool
	ctx   context.Context
	// stateCreated: openState made the state file (it did not exist).
	stateCreated                      bool
	exports                           stateExports     // exported values for substituteFrom (see stateExports)
	lookups                           reconcile.Lookup // Helm's lookup of ASO objects (DB and Get set once open)
	kube                              clusterSettings  // --kubeconfig, --in-cluster (cluster.go)
	autoplan                          autoplanSettings // serve --autoplan (autoplan.go)
	beside                            besideSettings   // plan/serve --beside-aso, --aso-namespace (beside.go)
	ref                               string           // a full Git reference instead of --branch (autoplan: a pull request)
	repo, branch, path, dir, cacheDir string
	gitUser, gitPasswordFile, gitCA   string
	gitSSHKey, gitKnownHosts          string        // --git-ssh-key, --git-known-hosts
	gitTimeout                        time.Duration // --git-timeout
	stateFile                         string
	cloudConfig, credentialsDir       string
	subscription                      string
	defaultPolicy                     string
	namespacePolicies                 []string
	parallelism                       int
	logLevel, logFormat               string
	config                            string
	kustomize, substituteStrict, flux bool
	kustomizeDirs, substitute         []string
	substituteFrom                    []string
	appConfig                         []string // --app-config (appconfig.go)
	sopsAgeKeyFile                    string
	sopsPGPKeys                       string        // --sops-pgp-keys
	offline                           bool          // the command reaches no Azure endpoint (plan --offline)
	sourceLimits                      source.Limits // --source-limit
	helmKubeVersion                   string        // --helm-kube-version
	helmAPIVersions                   []string      // --helm-api-versions
	chartCache                        string        // --chart-cache
	chartsOffline                     bool          // --charts-offline
	skipReleases                      []string      // --skip-release
	persistCharts                     bool          // serve, apply: charts cached beside the state by default
	maxDeletions                      int
	maxDeletionFraction               float64
}

func (s *settings) register(fs *pflag.FlagSet, withAzure bool) {
	fs.StringVar(&s.config, "config", "", "config `FILE` (YAML) whose keys are the flag names, e.g. repo: https://...")
	fs.StringVar(&s.repo, "repo", "", "Git repository URL (https://, http://, git://, file:// or a path)")
	fs.StringVar(&s.branch, "branch", "main", "branch to follow")
	fs.StringVar(&s.path, "path", "", "directory inside the repository holding the manifests")
	fs.StringVar(&s.dir, "dir", "", "read manifests from this local directory instead of Git (development)")
	fs.StringVar(&s.cacheDir, "cache-dir", defaultCacheDir(), "where the Git clone is kept between runs")
	fs.StringVar(&s.gitUser, "git-username", "", "username for HTTPS Git")
	fs.StringVar(&s.gitPasswordFile, "git-password-file", "", "file holding the HTTPS Git password or token")
	fs.StringVar(&s.gitCA, "git-ca-file", "", "PEM file of extra CAs to trust for HTTPS Git")
	fs.StringVar(&s.gitSSHKey, "git-ssh-key", "", "private key `FILE` for an SSH --repo (ssh://git@host/repo or git@host:repo); its passphrase, if any, in GITASO_GIT_SSH_PASSPHRASE")
	fs.StringVar(&s.gitKnownHosts, "git-known-hosts", "", "known_hosts `FILE` holding the SSH --repo server's host key (required: a host is never trusted on first use)")
	durationFlag(fs, &s.gitTimeout, "git-timeout", source.DefaultTimeout, "deadline of each exchange with the Git server (a fetch, a listing of its branches): a server that has not answered by then fails the poll, which counts as a source failure (GET /api/v1/status, gitaso_source_consecutive_failures); 0 or less: none")
	fs.BoolVar(&s.kustomize, "kustomize", true, "build directories holding a kustomization.yaml in memory (remote bases are refused)")
	fs.BoolVar(&s.flux, "flux", false, "follow the Flux Kustomization objects (kustomize.toolkit.fluxcd.io) found under --path as kustomize-controller does: build each one's spec.path (relative to the repository root, so the whole repository is read) with its patches, targetNamespace and postBuild substitution")
	fs.StringSliceVar(&s.kustomizeDirs, "kustomize-dir", nil, "build only these kustomization directories (relative to the repository root; repeatable)")
	// Arrays, not slices: a value may hold commas (NS/NAME,optional; X=a,b).
	fs.StringArrayVar(&s.substitute, "substitute", nil, "Flux post-build substitution variable NAME=VALUE (repeatable; wins over --substitute-from)")
	fs.StringArrayVar(&s.substituteFrom, "substitute-from", nil, "take ${VAR} values from a ConfigMap or Secret in the repository: [ConfigMap/|Secret/]NAMESPACE/NAME[,optional] (repeatable, later wins)")
	s.registerAppConfig(fs) // appconfig.go
	fs.BoolVar(&s.substituteStrict, "substitute-strict", false, "a ${VAR} with no value and no default is an error (Flux's strict substitution)")
	fs.StringVar(&s.sopsPGPKeys, "sops-pgp-keys", "", "PGP private keys (armored or binary, no passphrase) that decrypt SOPS-encrypted manifests: a file, or a directory of *.asc files as Flux's sops-gpg Secret holds; no gpg binary is used")
	fs.StringVar(&s.sopsAgeKeyFile, "sops-age-key-file", "", "age identities file that decrypts SOPS-encrypted manifests, as Flux's sops decryption (default $SOPS_AGE_KEY_FILE)")
	// Helm charts of Flux HelmReleases (render/helm.go).
	fs.StringVar(&s.helmKubeVersion, "helm-kube-version", "", "Kubernetes version charts see as .Capabilities.KubeVersion, e.g. v1.31.0 (Flux's helm-controller reports the cluster's; default "+render.DefaultKubeVersion+")")
	fs.StringSliceVar(&s.helmAPIVersions, "helm-api-versions", nil, "API versions charts see in .Capabilities.APIVersions besides Kubernetes' own, e.g. resources.azure.com/v1api20200601 (repeatable)")
	s.registerCharts(fs) // charts.go
	// Input limits (source.Limits, see source/doc.go).
	fs.Var(&s.sourceLimits, "source-limit", "change an input limit, NAME=VALUE (repeatable or comma-separated): file-size (32MiB), total-size (128MiB), yaml-nodes (4000000), total-yaml-nodes (16000000), yaml-depth (128), kustomize-objects (10000); per revision total-kustomize-objects (10000), kustomize-nodes (750000), rendered-size (64MiB), render-timeout (5m); per HelmRelease helm-bytes (256MiB), helm-steps (10000000); -1 for none")
	s.kube.register(fs)        // cluster.go
	s.beside.registerScope(fs) // beside.go
	fs.StringVar(&s.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&s.logFormat, "log-format", "text", "text or json")
	if !withAzure {
		fs.StringVar(&s.subscription, "subscription", "", "subscription ID for resources using the global credential (default $AZURE_SUBSCRIPTION_ID)")
		fs.StringVar(&s.credentialsDir, "credentials-dir", "", "directory of credential secrets kept out of Git: <namespace>/<secret>.env|.yaml")
		return
	}
	fs.StringVar(&s.stateFile, "state", "gitaso.db", "bbolt state file")
	fs.StringVar(&s.cloudConfig, "cloud-config", "", "Azure cloud configuration `FILE` (endpoints and CA), e.g. the cloud.json that gitaso emulator writes; default public Azure")
	fs.StringVar(&s.credentialsDir, "credentials-dir", "", "directory of credential secrets kept out of Git: <namespace>/<secret>.env|.yaml")
	fs.StringVar(&s.subscription, "subscription", "", "subscription ID for resources using the global credential (default $AZURE_SUBSCRIPTION_ID)")
	fs.StringVar(&s.defaultPolicy, "default-reconcile-policy", "manage", "reconcile policy of resources without the annotation: manage, skip or detach-on-delete (ASO's DEFAULT_RECONCILE_POLICY)")
	fs.StringSliceVar(&s.namespacePolicies, "namespace-reconcile-policy", nil, "per-namespace default policy, NAMESPACE=POLICY (repeatable)")
	fs.IntVar(&s.parallelism, "parallelism", 16, "concurrent ARM operations per subscription (one waiting between the polls of a long-running operation gives its share back meanwhile)")
	// The deletion guard (plan, apply, serve).
	guard := planner.DefaultGuard()
	fs.IntVar(&s.maxDeletions, "max-deletions", guard.MaxDeletions, "hold a revision that would delete more resources than this until its deletions are approved (0: no count limit)")
	fs.Float64Var(&s.maxDeletionFraction, "max-deletion-fraction", guard.MaxFraction, fmt.Sprintf("hold a revision that would delete more than this fraction of the managed resources (from %d deletions on; 0: no fraction limit)", planner.MinFractionCount))
}

func defaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "gitaso")
	}
	return ".gitaso-cache"
}

// asoEnv are ASO's own settings (aso-controller-settings) that gitaso reads
// when its GITASO_ variable is not set, so an ASO installation's environment
// carries over.
var asoEnv = map[string]string{
	"default-reconcile-policy": "DEFAULT_RECONCILE_POLICY",
	"sync-period":              "AZURE_SYNC_PERIOD", // "never" disables
	"parallelism":              "MAX_CONCURRENT_RECONCILES",
}

// applyEnvAndConfig fills every flag the user did not set from GITASO_<FLAG>
// (dashes as underscores) and then from the config file.
func applyEnvAndConfig(fs *pflag.FlagSet) error {
	var file map[string]any
	if cf := fs.Lookup("config"); cf != nil {
		path := cf.Value.String()
		if path == "" {
			path = os.Getenv("GITASO_CONFIG")
		}
		if path != "" {
			b, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("read config file: %w", err)
			}
			if err := yaml.Unmarshal(b, &file); err != nil {
				return fmt.Errorf("config file %s: %w", path, err)
			}
			for k := range file {
				if fs.Lookup(k) == nil {
					return fmt.Errorf("config file %s: unknown setting %q (settings are the flag names, see --help)", path, k)
				}
			}
		}
	}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" {
			return
		}
		env := "GITASO_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v, ok := os.LookupEnv(env)
		if !ok && asoEnv[f.Name] != "" {
			env = asoEnv[f.Name]
			v, ok = os.LookupEnv(env)
		}
		array := f.Value.Type() == "stringArray"
		if ok {
			if env == "AZURE_SYNC_PERIOD" && v == "never" {
				v = "0"
			}
			vals := []string{v}
			if array {
				// One value per line: values may hold commas.
				vals = strings.FieldsFunc(v, func(r rune) bool { return r == '\n' })
			}
			for _, v := range vals {
				if err := f.Value.Set(v); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", env, err))
				}
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			var s string
			if t, list := v.([]any); list && array {
				for _, p := range t {
					if err := f.Value.Set(fmt.Sprint(p)); err != nil {
						errs = append(errs, fmt.Errorf("config %s: %w", f.Name, err))
					}
				}
				return
			}
			switch t := v.(type) {
			case []any:
				parts := make([]string, len(t))
				for i, p := range t {
					parts[i] = fmt.Sprint(p)
				}
				s = strings.Join(parts, ",")
			default:
				s = fmt.Sprint(t)
			}
			if err := f.Value.Set(s); err != nil {
				errs = append(errs, fmt.Errorf("config %s: %w", f.Name, err))
			}
		}
	})
	return errors.Join(errs...)
}

func (s *settings) logger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(s.logLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if s.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func (s *settings) source(log *slog.Logger) (source.Source, error) {
	rnd, err := s.renderer(log)
	if err != nil {
		return nil, err
	}
	switch {
	case s.dir != "" && s.repo != "":
		return nil, errors.New("set either --repo or --dir, not both")
	case s.dir != "":
		if rnd == nil {
			return source.NewDir(s.dir, s.readPath(), source.WithLimits(s.sourceLimits)), nil
		}
		return source.NewDir(s.dir, s.readPath(), source.WithRenderer(rnd), source.WithLimits(s.sourceLimits)), nil
	case s.repo != "":
		opts := source.GitOptions{URL: s.repo, Branch: s.branch, Ref: s.ref, Path: s.readPath(), CacheDir: s.cacheDir, Username: s.gitUser, Logger: log, Limits: s.sourceLimits,
			Timeout: s.gitNetTimeout()}
		if rnd != nil {
			opts.Renderer = rnd
		}
		if s.gitPasswordFile != "" {
			b, err := os.ReadFile(s.gitPasswordFile)
			if err != nil {
				return nil, fmt.Errorf("read --git-password-file: %w", err)
			}
			opts.Password = strings.TrimSpace(string(b))
		}
		if s.gitCA != "" {
			b, err := os.ReadFile(s.gitCA)
			if err != nil {
				return nil, fmt.Errorf("read --git-ca-file: %w", err)
			}
			opts.CABundle = b
		}
		if source.IsSSHURL(s.repo) {
			key := &source.SSHKey{Passphrase: os.Getenv("GITASO_GIT_SSH_PASSPHRASE")}
			if s.gitSSHKey != "" {
				b, err := os.ReadFile(s.gitSSHKey)
				if err != nil {
					return nil, fmt.Errorf("read --git-ssh-key: %w", err)
				}
				key.Identity = b
			}
			if s.gitKnownHosts != "" {
				b, err := os.ReadFile(s.gitKnownHosts)
				if err != nil {
					return nil, fmt.Errorf("read --git-known-hosts: %w", err)
				}
				key.KnownHosts = string(b)
			}
			opts.SSH = key
		}
		return source.NewGit(opts)
	}
	return nil, errors.New("no source: set --repo URL (with --branch and --path) or --dir DIRECTORY")
}

// gitNetTimeout is --git-timeout as source.GitOptions.Timeout takes it:
// 0 there is the default, so "none" is negative.
func (s *settings) gitNetTimeout() time.Duration {
	if s.gitTimeout <= 0 {
		return -1
	}
	return s.gitTimeout
}

// readPath is the directory the source reads: --path, or with --flux the
// whole repository (a Flux Kustomization's spec.path is relative to the
// repository root; the renderer starts from --path).
func (s *settings) readPath() string {
	if s.flux {
		return ""
	}
	return s.path
}

// renderer builds the render stage (kustomize, SOPS decryption, Flux
// substitution, Flux Kustomizations).
func (s *settings) renderer(log *slog.Logger) (*render.Renderer, error) {
	o := render.Options{Kustomize: s.kustomize, KustomizeDirs: s.kustomizeDirs, Strict: s.substituteStrict, Logger: log, Limits: s.sourceLimits,
		Flux: s.flux, FluxPath: s.path, RepositoryURL: s.repo,
		KubeVersion: s.helmKubeVersion, HelmAPIVersions: s.helmAPIVersions, Exported: s.exports.lookup, SkipReleases: s.skipReleases,
		Lookup: s.lookups.Func}
	if s.flux {
		// Releases that render no ASO object are remembered beside the
		// chart cache (none without one: plan and validate keep nothing).
		dir, err := s.chartCacheDir()
		if err != nil {
			return nil, err
		}
		if dir != "" {
			o.ReleaseMemory = filepath.Join(dir, "releases-without-aso.json")
		}
	}
	if len(s.substitute) > 0 || len(s.substituteFrom) > 0 || s.substituteStrict {
		o.Substitute = true
	}
	vars, err := render.ParseVars(s.substitute)
	if err != nil {
		return nil, fmt.Errorf("--substitute: %w", err)
	}
	if vars == nil {
		vars = render.Vars{}
	}
	// With a cluster, substitute-from also reads it (cluster.go).
	if o.Exported, err = s.kube.substitution(log, o.Exported, vars); err != nil {
		return nil, err
	}
	if s.kube.oidcVar != "" && vars[s.kube.oidcVar] != "" {
		o.Substitute = true
	}
	o.Vars = vars
	for _, f := range s.substituteFrom {
		ref, err := render.ParseRef(f)
		if err != nil {
			return nil, fmt.Errorf("--substitute-from %q: %w", f, err)
		}
		o.SubstituteFrom = append(o.SubstituteFrom, ref)
	}
	if s.flux {
		// Kustomizations whose sourceRef is another Git repository.
		repos := &source.Repositories{Limits: s.sourceLimits, Logger: log, Timeout: s.gitNetTimeout()}
		if s.cacheDir != "" {
			repos.CacheDir = filepath.Join(s.cacheDir, "repositories")
		}
		if s.gitCA != "" {
			b, err := os.ReadFile(s.gitCA)
			if err != nil {
				return nil, fmt.Errorf("read --git-ca-file: %w", err)
			}
			repos.CABundle = b
		}
		o.Repositories = render.Repositories(repos)
		if o.Charts, err = s.chartFetcher(log); err != nil { // charts.go
			return nil, err
		}
	}
	keyFile, keyFlag := s.sopsAgeKeyFile, "--sops-age-key-file"
	if keyFile == "" {
		keyFile, keyFlag = os.Getenv("SOPS_AGE_KEY_FILE"), "SOPS_AGE_KEY_FILE"
	}
	if keyFile != "" {
		ids, err := render.LoadAgeIdentities(keyFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", keyFlag, err)
		}
		o.AgeIdentities = ids
	}
	if err := s.sopsKeys(&o); err != nil { // sops_keys.go
		return nil, err
	}
	if err := s.appConfigStores(&o); err != nil { // appconfig.go
		return nil, err
	}
	return render.New(o)
}

// stateExports gives the renderer the values gitaso's resources exported
// (recorded in the state file) for substituteFrom; db is set once the state
// file is open, before anything is fetched.
type stateExports struct{ db *state.DB }

func (x *stateExports) lookup(secret bool, namespace, name string) (map[string]string, bool) {
	if x == nil || x.db == nil {
		return nil, false
	}
	var d map[string]string
	var ok bool
	var err error
	if secret {
		d, ok, err = x.db.SecretExports(namespace, name)
	} else {
		d, ok, err = x.db.Exports(namespace, name)
	}
	return d, ok && err == nil
}

// localSecrets reads every secret of the credentials directory.
func (s *settings) localSecrets() (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	if s.credentialsDir == "" {
		return out, nil
	}
	lookup := azure.DirSecrets(s.credentialsDir)
	nss, err := os.ReadDir(s.credentialsDir)
	if err != nil {
		return nil, fmt.Errorf("read --credentials-dir: %w", err)
	}
	for _, ns := range nss {
		if !ns.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(s.credentialsDir, ns.Name()))
		if err != nil {
			return nil, fmt.Errorf("read --credentials-dir: %w", err)
		}
		for _, f := range files {
			name := strings.TrimSuffix(f.Name(), filepath.Ext(f.Name()))
			if f.IsDir() || name == "" {
				continue
			}
			data, ok, err := lookup(ns.Name(), name)
			if err != nil {
				return nil, err
			}
			if ok {
				out[ns.Name()+"/"+name] = data
			}
		}
	}
	return out, nil
}

func (s *settings) policies() (map[string]string, error) {
	m := map[string]string{}
	for _, p := range s.namespacePolicies {
		ns, pol, ok := strings.Cut(p, "=")
		if !ok || ns == "" || pol == "" {
			return nil, fmt.Errorf("--namespace-reconcile-policy %q: want NAMESPACE=POLICY", p)
		}
		m[ns] = pol
	}
	return m, nil
}

// env holds what a command built from the settings.
type env struct {
	log     *slog.Logger
	src     source.Source
	db      *state.DB
	clients *azure.Clients
	cfg     reconcile.Config
	// metrics is what serve's /metrics exports: the ARM client's requests,
	// the executor's resources and the plans of this process.
	metrics *metrics.Metrics
}

func (e *env) close() {
	if e.db != nil {
		_ = e.db.Close()
		e.db = nil
	}
}

// setup reads the environment and config file into the flags the user did
// not set, then builds the command's environment.
func (s *settings) setup(cmd *cobra.Command, stderr io.Writer, offline, needState bool) (*env, error) {
	if err := applyEnvAndConfig(cmd.Flags()); err != nil {
		return nil, err
	}
	s.ctx = cmd.Context()
	return s.build(stderr, offline, needState)
}

// build prepares source, state, credentials and ARM clients. offline skips
// everything Azure.
func (s *settings) build(stderr io.Writer, offline, needState bool) (*env, error) {
	e := &env{log: s.logger(stderr), cfg: reconcile.DefaultConfig(), metrics: metrics.New()}
	e.cfg.Metrics = e.metrics
	s.offline = offline
	var err error
	if e.src, err = s.source(e.log); err != nil {
		return nil, err
	}
	if err := s.wireInputs(e); err != nil { // cluster.go
		return nil, err
	}
	if err := s.wireASO(e); err != nil { // beside.go
		return nil, err
	}
	if _, err = s.localSecrets(); err != nil {
		return nil, err // a bad directory fails at once, then every run reads it again
	}
	e.cfg.LocalSecrets = s.localSecrets
	if e.cfg.NamespacePolicy, err = s.policies(); err != nil {
		return nil, err
	}
	e.cfg.DefaultPolicy = s.defaultPolicy
	if s.parallelism > 0 {
		e.cfg.Parallelism = s.parallelism
	}
	if s.maxDeletions < 0 || s.maxDeletionFraction < 0 || s.maxDeletionFraction > 1 {
		return nil, fmt.Errorf("--max-deletions must be ≥ 0 and --max-deletion-fraction between 0 and 1 (got %d, %g)", s.maxDeletions, s.maxDeletionFraction)
	}
	e.cfg.Guard = planner.Guard{MaxDeletions: s.maxDeletions, MaxFraction: s.maxDeletionFraction}
	e.cfg.SubscriptionID = s.subscription
	if e.cfg.SubscriptionID == "" {
		e.cfg.SubscriptionID = os.Getenv("AZURE_SUBSCRIPTION_ID")
	}
	if offline {
		if e.cfg.SubscriptionID == "" {
			e.cfg.SubscriptionID = "00000000-0000-0000-0000-000000000000"
			e.cfg.SubscriptionUnknown = true
		}
		return e, nil
	}
	// LoadCloud falls back to GITASO_CLOUD_CONFIG, then public Azure, and
	// applies the endpoint and CA environment overrides.
	cloud, err := azure.LoadCloud(s.cloudConfig)
	if err != nil {
		return nil, err
	}
	if s.reach {
		ctx := s.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		if err := cloud.Reachable(ctx); err != nil {
			return nil, err
		}
	}
	cred, err := azure.CredentialFromEnv()
	switch {
	case err == nil:
		e.cfg.Global = cred
		if e.cfg.SubscriptionID == "" {
			e.cfg.SubscriptionID = cred.SubscriptionID
		}
	case errors.Is(err, azure.ErrNoCredential):
		e.log.Warn("no global Azure credential in the environment; only namespaces with an " + aso.NamespaceCredentialSecret + " secret can be applied")
	default:
		return nil, fmt.Errorf("global credential: %w", err)
	}
	opts := azure.DefaultOptions()
	opts.Logger = e.log
	opts.Metrics = e.metrics
	e.clients = azure.NewClients(cloud, opts)
	if s.beside.enabled {
		// Beside ASO nothing is written: ARM refuses no write this client
		// could send, it sends none (Reader suffices).
		if e.clients, err = azure.ReadOnly(cloud, opts); err != nil {
			return nil, err
		}
	}
	if needState {
		if err := s.openState(e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// openState opens the state file and wires what reads it: exported values
// for substituteFrom and the cluster as the sink of exports. build calls it
// when the command needs state; serve --leader-elect once it leads (ha.go).
func (s *settings) openState(e *env, opts ...state.Option) error {
	var err error
	if _, serr := os.Stat(s.stateFile); errors.Is(serr, fs.ErrNotExist) {
		s.stateCreated = true
	}
	if e.db, err = state.Open(s.stateFile, opts...); err != nil {
		return err
	}
	if rep := e.db.CheckReport(); rep != nil && rep.MetaFallback != "" {
		e.log.Warn("state file: one meta page is damaged; bbolt uses the other and the next commit rewrites it",
			"state", s.stateFile, "detail", rep.MetaFallback)
	}
	s.exports.db = e.db
	s.lookups.DB = e.db
	if e.clients != nil && e.cfg.Global != nil {
		clients, cred := e.clients, e.cfg.Global
		s.lookups.Get = func(ctx context.Context, id, apiVersion string) ([]byte, error) {
			c, err := clients.For(cred)
			if err != nil {
				return nil, err
			}
			return c.Get(ctx, id, apiVersion)
		}
	}
	return s.wireExports(e) // cluster.go
}

// Run executes the gitaso command line.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := &cobra.Command{
		Use:   "gitaso",
		Short: "Run Azure Service Operator manifests from Git, without Kubernetes",
		Long: `gitaso reads ASO v2 manifests (apiVersion: <group>.azure.com/<version>) from a Git branch,
plans the exact ARM requests ASO would send, and applies them to Azure in dependency order.

  gitaso validate --dir ./infra                 parse and check everything, no Azure calls
  gitaso plan --repo https://git/x --path infra show what would change (exit code 2 when changes are pending)
  gitaso plan --offline --subscription ID ...   plan without any Azure access (everything as a create)
  gitaso apply --repo ...                       apply once
  gitaso serve --repo ... --listen 127.0.0.1:8080  run the daemon: poll, apply, serve status
  gitaso emulator                               run a local Azure (ARM + Entra ID) for experiments

Every flag can also be set as an environment variable GITASO_<FLAG> (dashes as underscores) or in a
YAML --config file with the flag names as keys; flags win over the environment, which wins over the file.
Azure credentials come from the environment as ASO reads them (AZURE_SUBSCRIPTION_ID, AZURE_TENANT_ID,
AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, a certificate, AZURE_FEDERATED_TOKEN_FILE, or managed identity),
from an ` + aso.NamespaceCredentialSecret + ` Secret per namespace, or per resource with ` + aso.AnnotationCredentialFrom + `.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(validateCmd(stdout, stderr), planCmd(stdout, stderr), applyCmd(stdout, stderr),
		serveCmd(stdout, stderr), emulatorCmd(stdout, stderr), versionCmd(stdout), commentCmd(stdout, stderr), stateCmd(stdout),
		importCmd(stdout, stderr), handoverCmd(stdout, stderr), exportCmd(stdout, stderr))
	return root.ExecuteContext(ctx)
}

func versionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print gitaso's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(stdout, "gitaso %s\n", Version)
			return err
		},
	}
}

func durationFlag(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	fs.DurationVar(p, name, def, usage)
}
