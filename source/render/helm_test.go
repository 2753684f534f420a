package render

import (
	"maps"

	"github.com/google/go-cmp/cmp"
	"testing"

	"github.com/gitaso/gitaso/manifest"
)

// helmRepo is a Flux repository in the shape issue 14 describes: the
// entry clusters/snd holds flux-system and an apps Kustomization whose
// postBuild substitutes from ConfigMap platform-vars; apps/ holds a team's
// HelmReleases of an infrastructure chart (charts/infra, in this
// repository) built on a library chart of ASO templates (charts/aso-lib,
// a file:// dependency), with values from every place Flux takes them.
var helmRepo = map[string]string{
	"clusters/snd/flux-system.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  url: https://github.com/contoso/fleet.git
  ref:
    branch: main
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  path: ./clusters/snd
  sourceRef:
    kind: GitRepository
    name: flux-system
`,
	"clusters/snd/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  path: ./apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substitute:
      CLUSTER: cluster-01
    substituteFrom:
      - kind: ConfigMap
        name: platform-vars
`,
	"clusters/snd/platform-vars.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: platform-vars
  namespace: flux-system
data:
  ENVIRONMENT: snd
  LOCATION: uksouth
`,
	"apps/team-a.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: team-a-values
  namespace: team-a
data:
  values.yaml: |
    fromConfigMap: configmap
    fromValues: configmap
    nested:
      a: configmap
      b: configmap
  other.yaml: |
    fromOtherKey: other
---
apiVersion: v1
kind: Secret
metadata:
  name: team-a-secret
  namespace: team-a
stringData:
  clientId: "0000-1111"
  values.yaml: |
    fromSecret: secret
    nested:
      b: secret
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: team-a
  namespace: team-a
spec:
  interval: 10m
  chart:
    spec:
      chart: ./charts/infra
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
      valuesFiles:
        - charts/infra/values.yaml
        - charts/infra/values-snd.yaml
  valuesFrom:
    - kind: ConfigMap
      name: team-a-values
    - kind: ConfigMap
      name: team-a-values
      valuesKey: other.yaml
    - kind: Secret
      name: team-a-secret
    - kind: Secret
      name: team-a-secret
      valuesKey: clientId
      targetPath: identity.clientId
    - kind: ConfigMap
      name: absent
      optional: true
    - kind: Secret
      name: team-a-secret
      valuesKey: absent
      optional: true
  values:
    environment: ${ENVIRONMENT}
    location: ${LOCATION}
    cluster: ${CLUSTER}
    fromValues: values
`,
	"apps/team-b.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2beta2
kind: HelmRelease
metadata:
  name: infra
  namespace: flux-system
spec:
  releaseName: team-b-infra
  targetNamespace: team-b
  chart:
    spec:
      chart: charts/infra
      sourceRef:
        kind: GitRepository
        name: flux-system
  values:
    location: ${LOCATION}
---
apiVersion: helm.toolkit.fluxcd.io/v2beta1
kind: HelmRelease
metadata:
  name: c
  namespace: team-c
spec:
  targetNamespace: team-c-prod
  chart:
    spec:
      chart: charts/infra
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
`,
	"charts/aso-lib/Chart.yaml": `apiVersion: v2
name: aso-lib
version: 0.3.1
type: library
`,
	"charts/aso-lib/templates/_resourcegroup.tpl": `{{- define "aso-lib.resourceGroup" -}}
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: {{ .name }}
  labels:
    owner: {{ (lookup "v1" "ConfigMap" "team-a" "owners").metadata }}
spec:
  location: {{ .location }}
{{- end -}}
`,
	"charts/infra/Chart.yaml": `apiVersion: v2
name: infra
version: 1.2.3
dependencies:
  - name: aso-lib
    version: ^0.3.0
    repository: file://../aso-lib
`,
	"charts/infra/.helmignore":           "*.bak\n",
	"charts/infra/templates/ignored.bak": "{{ fail \"ignored by .helmignore\" }}\n",
	"charts/infra/values.yaml": `location: westeurope
environment: none
tier: default
fromFile: default
fromConfigMap: default
fromSecret: default
fromOtherKey: default
fromValues: default
nested:
  a: default
  b: default
  c: default
identity:
  clientId: none
`,
	"charts/infra/values-snd.yaml": "fromFile: values-snd\n",
	"charts/infra/templates/_helpers.tpl": `{{- define "infra.rgName" -}}
{{ .Release.Name }}-rg
{{- end -}}
`,
	"charts/infra/templates/NOTES.txt": "Installed {{ .Release.Name }}.\n",
	"charts/infra/templates/resourcegroup.yaml": `{{ include "aso-lib.resourceGroup" (dict "name" (include "infra.rgName" .) "location" .Values.location) }}
`,
	"charts/infra/templates/identity.yaml": `apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: {{ .Release.Name }}-identity
spec:
  location: {{ .Values.location }}
  owner:
    name: {{ include "infra.rgName" . }}
`,
	"charts/infra/templates/values.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-rendered
data:
  environment: {{ .Values.environment | quote }}
  cluster: {{ .Values.cluster | default "unset" | quote }}
  tier: {{ .Values.tier | quote }}
  fromFile: {{ .Values.fromFile | quote }}
  fromConfigMap: {{ .Values.fromConfigMap | quote }}
  fromOtherKey: {{ .Values.fromOtherKey | quote }}
  fromSecret: {{ .Values.fromSecret | quote }}
  fromValues: {{ .Values.fromValues | quote }}
  nested: {{ .Values.nested | toJson | quote }}
  clientId: {{ .Values.identity.clientId | quote }}
  lookup: {{ lookup "v1" "Secret" "team-a" "anything" | toJson | quote }}
  release: "{{ .Release.Name }} {{ .Release.Namespace }} install={{ .Release.IsInstall }} upgrade={{ .Release.IsUpgrade }} revision={{ .Release.Revision }}"
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  literal: "${NOT_SUBSTITUTED}"
`,
	"charts/infra/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  template:
    spec:
      containers:
        - name: web
          image: nginx:1.27
`,
	"charts/infra/templates/test-hook.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations:
    helm.sh/hook: test
spec:
  containers:
    - name: t
      image: busybox
`,
	"charts/infra/templates/pre-install.yaml": `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: {{ .Release.Name }}-pre
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
spec:
  location: {{ .Values.location }}
`,
}

// withFiles returns helmRepo with files changed (an empty content removes
// the file).
func withFiles(changes map[string]string) map[string]string {
	files := maps.Clone(helmRepo)
	for p, c := range changes {
		if c == "" {
			delete(files, p)
			continue
		}
		files[p] = c
	}
	return files
}

func helmFetch(t *testing.T, files map[string]string, opts Options) (*manifest.Snapshot, error) {
	t.Helper()
	return fluxFetch(t, writeRepo(t, files), "clusters/snd", opts)
}

func findID(t *testing.T, objs []manifest.Object, id string) manifest.Object {
	t.Helper()
	for _, o := range objs {
		if o.ID() == id {
			return o
		}
	}
	t.Fatalf("no object %s among %v", id, ids(objs))
	return manifest.Object{}
}

// TestHelmRelease renders the repository above: HelmReleases in a Flux
// Kustomization's output (substituted by it), a chart of this repository
// with a file:// library chart, values from every source in Flux's order,
// release names and namespaces, hooks, provenance.
func TestHelmRelease(t *testing.T) {
	snap, err := helmFetch(t, helmRepo, Options{Strict: true, KubeVersion: "v1.31.2"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"flux-system/ConfigMap/platform-vars",
		"team-a/ConfigMap/team-a-rendered",
		"team-a/ConfigMap/team-a-values",
		"team-a/ResourceGroup/team-a-pre", // a pre-install hook: kept as an object
		"team-a/ResourceGroup/team-a-rg",  // from the library chart
		"team-a/Secret/team-a-secret",
		"team-a/UserAssignedIdentity/team-a-identity",
		"team-b/ConfigMap/team-b-infra-rendered", // releaseName, targetNamespace
		"team-b/ResourceGroup/team-b-infra-pre",
		"team-b/ResourceGroup/team-b-infra-rg",
		"team-b/UserAssignedIdentity/team-b-infra-identity",
		"team-c-prod/ConfigMap/team-c-prod-c-rendered", // <targetNamespace>-<name>
		"team-c-prod/ResourceGroup/team-c-prod-c-pre",
		"team-c-prod/ResourceGroup/team-c-prod-c-rg",
		"team-c-prod/UserAssignedIdentity/team-c-prod-c-identity",
	}
	if diff := cmp.Diff(want, ids(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	// Non-ASO objects of a chart are reported as ignored; the test hook
	// and the HelmReleases themselves are gone.
	wantIgnored := []string{
		"flux-system/GitRepository/flux-system",
		"flux-system/Kustomization/apps",
		"flux-system/Kustomization/flux-system",
		"team-a/Deployment/team-a-web",
		"team-b/Deployment/team-b-infra-web",
		"team-c-prod/Deployment/team-c-prod-c-web",
	}
	if diff := cmp.Diff(wantIgnored, ids(snap.Ignored)); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}

	values := findID(t, snap.Objects, "team-a/ConfigMap/team-a-rendered")
	wantData := map[string]any{
		"environment":   "snd",        // ${ENVIRONMENT} from the Kustomization's substituteFrom
		"cluster":       "cluster-01", // its inline substitute
		"tier":          "default",    // values.yaml, listed in valuesFiles
		"fromFile":      "values-snd", // a later valuesFile
		"fromConfigMap": "configmap",  // valuesFrom ConfigMap, values.yaml key
		"fromOtherKey":  "other",      // valuesFrom with valuesKey
		"fromSecret":    "secret",     // valuesFrom Secret
		"fromValues":    "values",     // spec.values last
		"nested":        `{"a":"configmap","b":"secret","c":"default"}`,
		"clientId":      "0000-1111", // targetPath
		"lookup":        "{}",        // helm template's lookup
		"release":       "team-a team-a install=true upgrade=false revision=1",
		"kube":          "v1.31.2",
		"literal":       "${NOT_SUBSTITUTED}", // chart output is not substituted
	}
	if diff := cmp.Diff(wantData, values.Content["data"]); diff != "" {
		t.Errorf("rendered values (-want +got):\n%s", diff)
	}
	// The values valuesFrom took from the Secret are secret in the chart's
	// objects: masked wherever they land, the others not.
	masked, _ := manifest.Mask(values.Content, values.Secrets)
	data := masked.(map[string]any)["data"].(map[string]any)
	for k, v := range data {
		hidden := manifest.IsSecretLabel(v.(string))
		if want := k == "fromSecret" || k == "nested" || k == "clientId"; hidden != want {
			t.Errorf("data.%s = %q: masked %v, want %v", k, v, hidden, want)
		}
	}
	// Chart defaults only (a v2beta1 release without values).
	c := findID(t, snap.Objects, "team-c-prod/ConfigMap/team-c-prod-c-rendered")
	if got := field(c, "data", "fromFile"); got != "default" {
		t.Errorf("team-c fromFile = %v, want the chart's default", got)
	}
	if got := field(c, "data", "release"); got != "team-c-prod-c team-c-prod install=true upgrade=false revision=1" {
		t.Errorf("team-c release = %v", got)
	}
	if got := field(findID(t, snap.Objects, "team-b/ResourceGroup/team-b-infra-rg"), "spec", "location"); got != "uksouth" {
		t.Errorf("team-b location = %v, want uksouth (${LOCATION})", got)
	}

	// Provenance: the HelmRelease's file and line, its Kustomization, the
	// chart and the template.
	rg := findID(t, snap.Objects, "team-a/ResourceGroup/team-a-rg")
	if rg.File != "apps/team-a.yaml" || rg.Line != 28 {
		t.Errorf("rg at %s:%d, want apps/team-a.yaml:28 (the HelmRelease)", rg.File, rg.Line)
	}
	wantAnn := map[string]string{
		AnnotationFluxKustomization: "flux-system/apps",
		AnnotationHelmRelease:       "team-a/team-a",
		AnnotationHelmChart:         "infra@1.2.3",
		AnnotationHelmTemplate:      "infra/templates/resourcegroup.yaml",
	}
	if diff := cmp.Diff(wantAnn, rg.Annotations()); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	wantLabels := map[string]string{"owner": "", helmLabelName: "team-a", helmLabelNamespace: "team-a"}
	if diff := cmp.Diff(wantLabels, rg.Labels()); diff != "" {
		t.Errorf("labels (-want +got; an empty lookup leaves owner empty):\n%s", diff)
	}
	if got := findID(t, snap.Objects, "team-a/ResourceGroup/team-a-pre").Annotations()[AnnotationHelmHook]; got != "pre-install,pre-upgrade" {
		t.Errorf("hook annotation %q", got)
	}
	if o := findID(t, snap.Objects, "team-b/UserAssignedIdentity/team-b-infra-identity"); o.File != "apps/team-b.yaml" || o.Line != 1 {
		t.Errorf("team-b identity at %s:%d, want apps/team-b.yaml:1", o.File, o.Line)
	}
}
