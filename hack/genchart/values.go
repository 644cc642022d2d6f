package main

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/rightsize-dev/kubectl-rightsize/config"
)

// chartYAML is the chart's metadata. A release packages the chart with its
// own version (helm package --version X --app-version vX, .goreleaser.yaml);
// in a checkout the image is "latest", as a development build of
// `operator install` prints.
const chartYAML = `apiVersion: v2
name: kubectl-rightsize
description: The kubectl-rightsize operator, which provisions right-sized nodes for pending pods and consolidates them; the same manifests as kubectl rightsize operator install.
type: application
# Set by the release: helm package --version <version> --app-version v<version>.
version: 0.0.0-dev
appVersion: latest
home: https://github.com/rightsize-dev/kubectl-rightsize
sources:
- https://github.com/rightsize-dev/kubectl-rightsize
keywords:
- autoscaling
- nodes
- karpenter
`

// valuesYAML is values.yaml: each value with what it does and the
// `operator install` flag it matches, and as its default the rendered one;
// the image is repo, pinned to digest when that is not empty.
func (d defaults) valuesYAML(repo, digest string) ([]byte, error) {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("# The defaults render what `kubectl rightsize operator install` prints (with\n" +
		"# --cluster-name for aws); each value names the flag it matches.\n\n")
	field := func(comment, key string, value any) error {
		if comment != "" {
			b.WriteString("# " + strings.ReplaceAll(comment, "\n", "\n# ") + "\n")
		}
		y, err := yaml.Marshal(map[string]any{key: value})
		if err != nil {
			return fmt.Errorf("value %s: %w", key, err)
		}
		b.Write(y)
		return nil
	}
	fields := []struct {
		comment, key string
		value        any
	}{
		{"Cloud the operator launches nodes in: " + strings.Join(config.Clouds, " or ") + " (--cloud).", "cloud", d["cloud"]},
		{"Name of the cluster (--cluster-name): the operator tags the instances it launches\n" +
			"with it and only ever deletes instances with that tag. Required with aws (the\n" +
			"EKS cluster's name); empty with sim means " + defaultSimClusterName + ".", "clusterName", ""},
		{"Cloud region (--region); empty: the operator's environment, e.g. the EC2\ninstance metadata.", "region", ""},
		{"API server URL new nodes join (--cluster-endpoint, aws); empty: the\noperator's in-cluster server.", "clusterEndpoint", ""},
		{"The cluster's minor version for AMI aliases, e.g. 1.33 (--kubernetes-version, aws).", "kubernetesVersion", ""},
		{"SQS queue EventBridge sends EC2 interruption events to (--interruption-queue,\naws; see docs/aws.md); empty: off.", "interruptionQueue", ""},
		{"More flags of `kubectl-rightsize operator`, appended to its command line,\ne.g. [--log-level=debug].", "extraArgs", []any{}},
		{"The operator image (--image). tag defaults to the chart's appVersion, the\nrelease's own version; a digest (sha256:…), when set, pins the image instead.",
			"image", map[string]any{"repository": repo, "tag": "", "digest": digest, "pullPolicy": d["pullPolicy"]}},
		{"Replicas of the operator; they elect a leader, the others stand by.", "replicas", d["replicas"]},
		{"The operator container's requests and limits (GOMEMLIMIT follows limits.memory).", "resources", d["resources"]},
		{"Where the operator's pods may run. The default affinity keeps them off the\nnodes the operator provisions: consolidating such a node would evict the\noperator doing it.", "nodeSelector", d["nodeSelector"]},
		{"", "tolerations", d["tolerations"]},
		{"", "affinity", d["affinity"]},
		{"Annotations of the operator's ServiceAccount, e.g. eks.amazonaws.com/role-arn\nfor IAM roles for service accounts (--iam-role-arn).", "serviceAccount", map[string]any{"annotations": map[string]any{}}},
		{"create renders the release namespace with the restricted Pod Security\nStandard labels, as `operator install` does (install with -n rightsize-system\n--create-namespace; helm applies the labels to it; helm uninstall keeps it).\nfalse installs into an existing namespace and leaves its labels alone, as\n`operator install --create-namespace=false`; it is required for a namespace\nshared with the cluster's own workloads (default, kube-*), e.g. kube-system.", "namespace", map[string]any{"create": true}},
	}
	for i, f := range fields {
		if i > 0 && f.comment != "" {
			b.WriteString("\n")
		}
		if err := field(f.comment, f.key, f.value); err != nil {
			return nil, err
		}
	}
	return []byte(b.String()), nil
}

// valuesSchema is values.schema.json: helm install, template and lint refuse
// values of the wrong type, an unknown cloud and unknown top-level values (a
// misspelt --set).
func valuesSchema() map[string]any {
	str := map[string]any{"type": "string"}
	obj := map[string]any{"type": "object"}
	strMap := map[string]any{"type": "object", "additionalProperties": str}
	return map[string]any{
		"$schema":              "https://json-schema.org/draft-07/schema#",
		"type":                 "object",
		"additionalProperties": false,
		"properties": map[string]any{
			"global":            obj,
			"cloud":             map[string]any{"type": "string", "enum": config.Clouds},
			"clusterName":       str,
			"region":            str,
			"clusterEndpoint":   str,
			"kubernetesVersion": str,
			"interruptionQueue": str,
			"extraArgs":         map[string]any{"type": "array", "items": str},
			"image": map[string]any{
				"type": "object", "additionalProperties": false,
				"properties": map[string]any{
					"repository": map[string]any{"type": "string", "minLength": 1},
					"tag":        str,
					"digest":     map[string]any{"type": "string", "pattern": "^(sha256:[0-9a-f]{64})?$"},
					"pullPolicy": map[string]any{"type": "string", "enum": []string{"Always", "IfNotPresent", "Never"}},
				},
			},
			"replicas":     map[string]any{"type": "integer", "minimum": 0},
			"resources":    obj,
			"nodeSelector": strMap,
			"tolerations":  map[string]any{"type": "array", "items": obj},
			"affinity":     obj,
			"serviceAccount": map[string]any{
				"type": "object", "additionalProperties": false,
				"properties": map[string]any{"annotations": strMap},
			},
			"namespace": map[string]any{
				"type": "object", "additionalProperties": false,
				"properties": map[string]any{"create": map[string]any{"type": "boolean"}},
			},
		},
	}
}

// helpers is templates/_helpers.tpl: the values `operator install` derives
// (cluster name, image, the ConfigMap's content-hashed name) and the checks
// it makes of its flags, as template functions.
func helpers() string {
	clouds := make([]string, len(config.Clouds))
	for i, c := range config.Clouds {
		clouds[i] = fmt.Sprintf("%q", c)
	}
	shared := make([]string, len(config.SharedNamespaceNames))
	for i, n := range config.SharedNamespaceNames {
		shared[i] = fmt.Sprintf("%q", n)
	}
	return `{{/* Code generated by hack/genchart (make generate) from config/; DO NOT EDIT. */}}

{{/* The cluster name: clusterName, or ` + defaultSimClusterName + ` for a cloud other than aws. */}}
{{- define "kubectl-rightsize.clusterName" -}}
{{- if .Values.clusterName }}{{ .Values.clusterName }}{{ else if ne .Values.cloud "aws" }}` + defaultSimClusterName + `{{ end }}
{{- end }}

{{/* The operator image: repository@digest, or repository:tag (default the chart's appVersion). */}}
{{- define "kubectl-rightsize.image" -}}
{{- if .Values.image.digest }}{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else }}{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{ end }}
{{- end }}

{{/*
The ConfigMap's name with kustomize's content hash (sigs.k8s.io/kustomize/api
hasher: sha256 of the JSON of data, kind and name, its first 10 hex digits with
0 1 3 a e spelt g h k m t), so that changing the cloud or the cluster name rolls
the Deployment, and the name is the one operator install prints. The name
hashed is empty: kustomize looks it up as the single key "metadata/name",
which no ConfigMap has.
*/}}
{{- define "kubectl-rightsize.configMapName" -}}
{{- $data := dict "cloud" .Values.cloud "cluster-name" (include "kubectl-rightsize.clusterName" .) -}}
{{- $hash := dict "kind" "ConfigMap" "name" "" "data" $data | toJson | sha256sum | trunc 10 -}}
` + configMap + `-{{ $hash | replace "0" "g" | replace "1" "h" | replace "3" "k" | replace "a" "m" | replace "e" "t" }}
{{- end }}

{{/* The checks operator install makes of its flags. */}}
{{- define "kubectl-rightsize.validate" -}}
{{- if not (has .Values.cloud (list ` + strings.Join(clouds, " ") + `)) }}
{{- fail (printf "cloud %q is not supported: use one of ` + strings.Join(config.Clouds, ", ") + `" .Values.cloud) }}
{{- end }}
{{- if and (eq .Values.cloud "aws") (not .Values.clusterName) }}
{{- fail "clusterName is required with cloud aws: the operator tags the instances it launches with it, and only ever deletes instances carrying that tag; pass the EKS cluster's name (--set clusterName=<name>)" }}
{{- end }}
{{- if and .Values.interruptionQueue (ne .Values.cloud "aws") }}
{{- fail (printf "an interruption queue is for cloud aws, not %q" .Values.cloud) }}
{{- end }}
{{- end }}

{{/*
The chart labels its namespace with the restricted Pod Security Standard:
never one shared with the cluster's own workloads (default and kube-*), the
rule of operator install (config.SharedNamespace).
*/}}
{{- define "kubectl-rightsize.checkNamespace" -}}
{{- if or (has .Release.Namespace (list ` + strings.Join(shared, " ") + `)) (hasPrefix "` + config.SharedNamespacePrefix + `" .Release.Namespace) }}
{{- fail (printf "namespace %s is shared with the cluster's own workloads: namespace.create would label it with the restricted Pod Security Standard, which refuses new pods of aws-node, kube-proxy and CSI drivers there; install with -n ` + config.DefaultNamespace + ` --create-namespace, or leave %s as it is with namespace.create=false (operator install: --create-namespace=false)" .Release.Namespace .Release.Namespace) }}
{{- end }}
{{- end }}
`
}

// notes is templates/NOTES.txt, what helm install prints after it.
const notes = `The operator is starting (cloud {{ .Values.cloud }}, image {{ include "kubectl-rightsize.image" . }}); watch it with:
  kubectl -n {{ .Release.Namespace }} rollout status deployment/` + config.Deployment + `
`
