package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitaso/gitaso/emulator"
)

// federatedToken asks the emulator command to act as a cluster's OIDC issuer
// for gitaso itself: it writes a service-account token that workload-identity
// credentials exchange (AZURE_FEDERATED_TOKEN_FILE) and renews it.
type federatedToken struct {
	file, issuer, subject string
}

func registerEmulatorFlags(cmd *cobra.Command, o *emulator.CommandOptions) {
	def := emulator.DefaultCommandOptions()
	fs := cmd.Flags()
	fs.StringVar(&o.Addr, "addr", def.Addr, "listen address (HTTPS)")
	fs.StringVar(&o.Dir, "dir", def.Dir, "directory for ca.pem and cloud.json")
	fs.StringVar(&o.DataFile, "data", "", "keep the emulator's state in this file across restarts (default: in memory)")
	fs.DurationVar(&o.Latency, "latency", 0, "duration of long-running operations (e.g. 2s) for types without their own")
	fs.Float64Var(&o.ThrottleScale, "throttle-scale", 1, "scale ARM's throttling buckets (0.1 = ten times stricter)")
	fs.BoolVar(&o.NoThrottle, "no-throttle", false, "disable throttling")
	fs.StringVar(&o.SubscriptionID, "subscription", "", "default subscription ID")
	fs.StringVar(&o.TenantID, "tenant", "", "tenant ID")
	fs.StringSliceVar(&o.Hostnames, "hostname", nil, "extra host names for the serving certificate (repeatable)")
	fs.StringArrayVar(&o.Registries, "registry", nil, "serve an Azure Container Registry `NAME` (5 to 50 letters and digits): an OCI registry behind ACR's token exchange and AcrPull/AcrPush roles on its own HTTPS port; its login server is printed (repeatable)")
	fs.Float64Var(&o.Faults.Rate429, "fault-429", 0, "share of ARM requests answered 429 SubscriptionRequestsThrottled with Retry-After: 1 (0 to 1)")
	fs.Float64Var(&o.Faults.Rate500, "fault-500", 0, "share of ARM requests answered 500 InternalServerError (0 to 1)")
	fs.Float64Var(&o.Faults.Rate503, "fault-503", 0, "share of ARM requests answered 503 ServiceUnavailable (0 to 1)")
	fs.Float64Var(&o.Faults.ResetRate, "fault-reset", 0, "share of ARM requests whose connection is reset before they are served (0 to 1)")
	fs.Float64Var(&o.Faults.ResetAfterRate, "fault-reset-after", 0, "share of ARM requests served in full whose connection is then reset before the answer (0 to 1)")
	fs.DurationVar(&o.Faults.Latency, "fault-latency", 0, "latency added to every ARM request (e.g. 200ms)")
	fs.StringSliceVar(&o.Faults.Methods, "fault-methods", nil, "limit the --fault-* shares to these HTTP methods (e.g. PUT,DELETE; default all)")
	fs.StringArrayVar(&o.SignInRedirectURIs, "sign-in-redirect-uri", nil, "register the web application "+emulator.SignInApplicationName+" that signs people in at this redirect `URL` (e.g. http://127.0.0.1:8080/auth/callback for gitaso serve --oidc-*) and print its GITASO_OIDC_ISSUER, _CLIENT_ID and _CLIENT_SECRET (repeatable)")
	fs.Var(&userFlag{users: &o.Users}, "user", "a person who can sign in at the tenant's authorization endpoint, `UPN[=GROUP,...]` with the values of the ID token's groups claim, e.g. alice@gitaso.local=team-a (repeatable)")
	ft := &federatedToken{}
	fs.StringVar(&ft.file, "federated-token-file", "", "write a service-account token here (renewed hourly) for workload identity, as a cluster's OIDC issuer would")
	fs.StringVar(&ft.issuer, "federated-issuer", "https://oidc.gitaso.local/cluster-01/", "issuer of the federated token")
	fs.StringVar(&ft.subject, "federated-subject", "system:serviceaccount:azureserviceoperator-system:azureserviceoperator-default", "subject of the federated token")
	o.OnReady = func(e *emulator.Emulator) {
		if ft.file == "" {
			return
		}
		write := func() {
			tok, err := e.IssueServiceAccountToken(ft.issuer, ft.subject, "api://AzureADTokenExchange")
			if err != nil {
				fmt.Fprintln(os.Stderr, "gitaso emulator: federated token:", err)
				return
			}
			tmp := ft.file + ".tmp"
			if err := os.WriteFile(tmp, []byte(tok), 0o600); err == nil {
				_ = os.Rename(tmp, ft.file)
			}
		}
		if abs, err := filepath.Abs(ft.file); err == nil {
			ft.file = abs
		}
		write()
		fmt.Fprintf(cmd.OutOrStdout(), "export AZURE_FEDERATED_TOKEN_FILE=%s\n", ft.file)
		go func() {
			t := time.NewTicker(50 * time.Minute)
			defer t.Stop()
			for {
				select {
				case <-cmd.Context().Done():
					return
				case <-t.C:
					write()
				}
			}
		}()
	}
}

// userFlag parses --user UPN[=GROUP,...] (repeatable).
type userFlag struct{ users *[]emulator.User }

func (f *userFlag) String() string {
	if f.users == nil {
		return ""
	}
	var out []string
	for _, u := range *f.users {
		out = append(out, u.UserPrincipalName)
	}
	return strings.Join(out, ",")
}

func (f *userFlag) Set(v string) error {
	upn, groups, _ := strings.Cut(v, "=")
	upn = strings.TrimSpace(upn)
	if upn == "" || strings.ContainsAny(upn, " \t,") {
		return fmt.Errorf("--user %q: want UPN[=GROUP,...], e.g. alice@gitaso.local=team-a", v)
	}
	u := emulator.User{UserPrincipalName: upn}
	for _, g := range strings.Split(groups, ",") {
		if g = strings.TrimSpace(g); g != "" {
			u.Groups = append(u.Groups, g)
		}
	}
	*f.users = append(*f.users, u)
	return nil
}

func (f *userFlag) Type() string { return "user" }
