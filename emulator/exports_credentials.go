package emulator

import (
	"fmt"
	"strings"
)

// Cluster credentials:
//
//   - AKS managed cluster: listClusterAdminCredential and listClusterUserCredential → {"kubeconfigs": [{"name":
//     "clusterAdmin"|"clusterUser", "value": <base64 of a kubeconfig>}]}, the kubeconfig pointing at the cluster's
//     properties.fqdn (set on create: {dnsPrefix}-{hash}.hcp.{location}.azmk8s.io) with a client certificate
//     (admin) or a token (user);
//   - Azure Red Hat OpenShift cluster: listAdminCredentials → {"kubeconfig": <kubeconfig as text>};
//     listCredentials → {"kubeadminUsername": "kubeadmin", "kubeadminPassword"}.

func init() {
	registerExportActions("microsoft.containerservice/managedclusters", map[string]exportAction{
		"listClusterAdminCredential": func(e *Emulator, r *resource) map[string]any { return aksCredentials(e, r, "clusterAdmin") },
		"listClusterUserCredential":  func(e *Emulator, r *resource) map[string]any { return aksCredentials(e, r, "clusterUser") },
	})
	registerExportActions("microsoft.redhatopenshift/openshiftclusters", map[string]exportAction{
		"listAdminCredentials": func(e *Emulator, r *resource) map[string]any {
			return map[string]any{"kubeconfig": kubeconfig(aroAPIServer(r), r.Name, "system:admin", "token: "+e.keyFor(r, "aro/admin"))}
		},
		"listCredentials": func(e *Emulator, r *resource) map[string]any {
			return map[string]any{"kubeadminUsername": "kubeadmin", "kubeadminPassword": aroPassword(e, r)}
		},
	})
	typeDefaults["microsoft.containerservice/managedclusters"] = append(typeDefaults["microsoft.containerservice/managedclusters"],
		fieldDefault{"properties.fqdn", "{name}-{uniq}.hcp.{location}.azmk8s.io"})
}

func aksCredentials(e *Emulator, r *resource, name string) map[string]any {
	body, _ := r.decode()
	server := "https://" + firstNonEmpty(getString(body, "properties", "fqdn"), r.Name+".hcp."+r.Location+".azmk8s.io") + ":443"
	user := name + "_" + segmentAfter(r.ID, "resourceGroups") + "_" + r.Name
	auth := "token: " + e.keyFor(r, name)
	if name == "clusterAdmin" {
		auth = "client-certificate-data: " + encodeStd([]byte("emulated certificate of "+user)) + "\n    client-key-data: " +
			encodeStd([]byte("emulated key of "+user+" "+e.keyFor(r, name)))
	}
	cfg := kubeconfig(server, r.Name, user, auth)
	return map[string]any{"kubeconfigs": []any{map[string]any{"name": name, "value": encodeStd([]byte(cfg))}}}
}

// kubeconfig renders a one-cluster kubeconfig.
func kubeconfig(server, cluster, user, auth string) string {
	return fmt.Sprintf(`apiVersion: v1
clusters:
- cluster:
    server: %s
  name: %s
contexts:
- context:
    cluster: %s
    user: %s
  name: %s
current-context: %s
kind: Config
preferences: {}
users:
- name: %s
  user:
    %s
`, server, cluster, cluster, user, cluster, cluster, user, auth)
}

func aroAPIServer(r *resource) string {
	body, _ := r.decode()
	if u := getString(body, "properties", "apiserverProfile", "url"); u != "" {
		return u
	}
	domain := firstNonEmpty(getString(body, "properties", "clusterProfile", "domain"), r.Name)
	if !strings.Contains(domain, ".") {
		domain += "." + strings.ToLower(r.Location) + ".aroapp.io"
	}
	return "https://api." + domain + ":6443/"
}

// aroPassword is a kubeadmin password of Azure's form: four groups of five characters.
func aroPassword(e *Emulator, r *resource) string {
	k := strings.NewReplacer("+", "x", "/", "y", "=", "z").Replace(e.keyFor(r, "aro/kubeadmin"))
	return k[0:5] + "-" + k[5:10] + "-" + k[10:15] + "-" + k[15:20]
}
