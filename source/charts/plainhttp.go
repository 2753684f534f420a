package charts

import "net/url"

// Plain http://, as Flux reads it (docs/flux.md, "Plain HTTP"):
//
//   - an HTTP/S HelmRepository's spec.url, the chart URLs of its index and
//     a chart dependency's repository may be http://: source-controller
//     fetches them (its --insecure-allow-http defaults to true), and its
//     spec.insecure "is supported only for Helm OCI repositories";
//   - a GitRepository's spec.url may be http:// ("an HTTP/S or SSH
//     address"), as for the GitRepositories of Kustomizations;
//   - an OCI HelmRepository is reached over TLS unless spec.insecure is
//     true (Flux's documented meaning of the field; oci.go).
//
// Each host reached over http:// is logged once per Fetcher as a warning:
// what is fetched over it can be changed on the way.

// warnPlainHTTP logs, once per host, that u is read without TLS.
func (f *Fetcher) warnPlainHTTP(u, what string) {
	key := u
	if p, err := url.Parse(u); err == nil {
		key = p.Host
	}
	if _, seen := f.plainHTTP.LoadOrStore(key, true); seen {
		return
	}
	f.log.Warn("reading over plain http:// (no TLS): what is fetched can be changed on the way; prefer https://", "what", what, "url", redact(u))
}
