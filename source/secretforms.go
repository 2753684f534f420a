package source

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gitaso/gitaso/manifest"
)

// attachSecrets records in each object the secret values of its file that
// it holds (manifest.Object.Secrets).
func attachSecrets(objs []manifest.Object, secrets []manifest.SecretValue) {
	forms := secretForms(secrets)
	for i := range objs {
		objs[i].Secrets = manifest.Occurring(objs[i].Content, forms)
	}
}

// secretForms adds to secrets the forms the parser may give a value
// substituted into YAML text: trimmed (a plain scalar), its escapes read (a
// double- or single-quoted scalar: "a\tb" holds a tab), or typed (a plain
// "0x1F" is the integer 31), so that the field is found, and masked,
// whichever way the value was written.
func secretForms(secrets []manifest.SecretValue) []manifest.SecretValue {
	out := slices.Clone(secrets)
	add := func(form string, s manifest.SecretValue) {
		if form == "" {
			return
		}
		v := manifest.NewSecretValue(form, s.From)
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, s := range secrets {
		v := s.Value()
		add(strings.TrimSpace(v), s)
		if x, ok := scalar(v); ok {
			add(x, s)
		}
		for _, q := range []string{`"`, `'`} {
			if x, ok := scalar(q + v + q); ok {
				add(x, s)
			}
		}
	}
	return out
}

// scalar parses text as one YAML scalar and returns its text form.
func scalar(text string) (string, bool) {
	var x any
	if err := yaml.Unmarshal([]byte(text), &x); err != nil {
		return "", false
	}
	switch t := x.(type) {
	case string:
		return t, true
	case bool:
		return strconv.FormatBool(t), true
	case int:
		return strconv.Itoa(t), true
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64), true
	case nil, map[string]any, []any:
		return "", false
	}
	return fmt.Sprint(x), true
}
