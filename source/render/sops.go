package render

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"
	"gopkg.in/yaml.v3"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/source"
)

// ErrSOPSNoIdentity is wrapped by the error for a SOPS-encrypted document
// whose data key none of the configured age identities opens.
var ErrSOPSNoIdentity = errors.New("no age identity given to gitaso can decrypt this file")

// ErrSOPSMACMismatch is wrapped by the error for a SOPS-encrypted document
// whose values do not match the MAC SOPS stored when it encrypted them: the
// file was changed (or reordered) after encryption.
var ErrSOPSMACMismatch = errors.New("SOPS MAC mismatch")

// ParseAgeIdentities reads an age identities file (the format of
// SOPS_AGE_KEY_FILE and age-keygen's output: one AGE-SECRET-KEY-1... per
// line, '#' comments and blank lines ignored).
func ParseAgeIdentities(data []byte) ([]age.Identity, error) {
	ids, err := age.ParseIdentities(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parse age identities: %w", err)
	}
	return ids, nil
}

// LoadAgeIdentities reads and parses an age identities file.
func LoadAgeIdentities(path string) ([]age.Identity, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read age identities: %w", err)
	}
	ids, err := ParseAgeIdentities(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ids, nil
}

// hasSOPSStanza is a cheap test: could text carry a top-level sops stanza?
func hasSOPSStanza(text string) bool {
	return strings.Contains(text, "sops")
}

// sopsMeta is the part of a document's sops stanza gitaso uses.
type sopsMeta struct {
	sopsKeyGroup            `yaml:",inline"`
	KeyGroups               []sopsKeyGroup `yaml:"key_groups"`
	ShamirThreshold         int            `yaml:"shamir_threshold"`
	LastModified            string         `yaml:"lastmodified"`
	MAC                     string         `yaml:"mac"`
	UnencryptedSuffix       string         `yaml:"unencrypted_suffix"`
	EncryptedSuffix         string         `yaml:"encrypted_suffix"`
	UnencryptedRegex        string         `yaml:"unencrypted_regex"`
	EncryptedRegex          string         `yaml:"encrypted_regex"`
	UnencryptedCommentRegex string         `yaml:"unencrypted_comment_regex"`
	EncryptedCommentRegex   string         `yaml:"encrypted_comment_regex"`
	MACOnlyEncrypted        bool           `yaml:"mac_only_encrypted"`
	Version                 string         `yaml:"version"`

	unencryptedRE, encryptedRE *regexp.Regexp
}

type sopsAgeKey struct {
	Recipient string `yaml:"recipient"`
	Enc       string `yaml:"enc"`
}

// macOnlyEncryptedInit starts the MAC when mac_only_encrypted is set, so
// that such a MAC never equals one over all values (SOPS's constant).
var macOnlyEncryptedInit = []byte{0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0xb, 0xb, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69}

// encValueRE is SOPS's encrypted value: ENC[AES256_GCM,data:...,iv:...,tag:...,type:...].
var encValueRE = regexp.MustCompile(`^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]`)

// encCommentRE is an encrypted comment (SOPS encrypts YAML comments too).
var encCommentRE = regexp.MustCompile(`#\s*ENC\[AES256_GCM,data:[^\],]*,iv:[^\],]*,tag:[^\],]*,type:comment\]`)

// decryptSOPS decrypts one YAML or JSON document carrying a top-level sops
// stanza, as SOPS does: it opens the data key with one of ids, decrypts
// every encrypted value (the AES-GCM additional data is the value's key
// path), checks the MAC over the cleartext values and removes the stanza.
// Values are replaced in place so that lines stay where they were; the
// stanza's lines become blank and encrypted comments become empty ones. A
// document without a stanza is returned as it is with ok false. Errors are
// *diag.Error with Line relative to text (1 = its first line) and never hold
// a decrypted value.
func decryptSOPS(text string, ids []age.Identity) (out string, ok bool, derr *diag.Error) {
	return decryptSOPSWith(context.Background(), text, &sopsKeys{age: ids})
}

// decryptSOPSWith is decryptSOPS with every kind of key gitaso was given:
// the data key opens with whichever of the file's keys gitaso holds.
func decryptSOPSWith(ctx context.Context, text string, keys *sopsKeys) (out string, ok bool, derr *diag.Error) {
	if !hasSOPSStanza(text) {
		return text, false, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil || len(doc.Content) == 0 {
		return text, false, nil // not for us: the parser reports bad YAML
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return text, false, nil
	}
	var stanzaKey, stanzaVal *yaml.Node
	stanzaIdx := -1
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "sops" && root.Content[i+1].Kind == yaml.MappingNode {
			stanzaKey, stanzaVal, stanzaIdx = root.Content[i], root.Content[i+1], i
		}
	}
	if stanzaVal == nil {
		return text, false, nil
	}
	fail := func(line int, field, msg string, err error) (string, bool, *diag.Error) {
		return "", true, &diag.Error{Line: line, Field: field, Msg: msg, Err: err}
	}
	var meta sopsMeta
	if err := stanzaVal.Decode(&meta); err != nil {
		return fail(stanzaKey.Line, "sops", "malformed SOPS metadata", err)
	}
	if meta.MAC == "" || meta.Version == "" {
		return text, false, nil // a field named sops, not SOPS metadata
	}
	if meta.UnencryptedCommentRegex != "" || meta.EncryptedCommentRegex != "" {
		return fail(stanzaKey.Line, "sops", "SOPS files encrypted with unencrypted_comment_regex or encrypted_comment_regex are not supported by gitaso", nil)
	}
	var err error
	if meta.UnencryptedRegex != "" {
		if meta.unencryptedRE, err = regexp.Compile(meta.UnencryptedRegex); err != nil {
			return fail(stanzaKey.Line, "sops.unencrypted_regex", "invalid regular expression", err)
		}
	}
	if meta.EncryptedRegex != "" {
		if meta.encryptedRE, err = regexp.Compile(meta.EncryptedRegex); err != nil {
			return fail(stanzaKey.Line, "sops.encrypted_regex", "invalid regular expression", err)
		}
	}

	key, derr := sopsDataKey(ctx, &meta, keys)
	if derr != nil {
		derr.Line = stanzaKey.Line
		return "", true, derr
	}

	// Walk the document as SOPS walks its tree: mapping entries in order,
	// sequence items under their parent's path, nulls skipped.
	hash := sha512.New()
	if meta.MACOnlyEncrypted {
		hash.Write(macOnlyEncryptedInit)
	}
	type edit struct {
		node *yaml.Node
		repl string
	}
	var edits []edit
	var walk func(n *yaml.Node, path []string) *diag.Error
	walk = func(n *yaml.Node, path []string) *diag.Error {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n == root && i == stanzaIdx {
					continue
				}
				k := n.Content[i]
				if k.Kind != yaml.ScalarNode {
					return &diag.Error{Line: k.Line, Field: dotted(path), Msg: "SOPS: only scalar keys are supported"}
				}
				if err := walk(n.Content[i+1], append(path[:len(path):len(path)], k.Value)); err != nil {
					return err
				}
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				if err := walk(c, path); err != nil {
					return err
				}
			}
		case yaml.AliasNode:
			return &diag.Error{Line: n.Line, Field: dotted(path), Msg: "SOPS: YAML aliases are not supported in encrypted files"}
		case yaml.ScalarNode:
			if n.ShortTag() == "!!null" {
				return nil
			}
			encrypted := meta.shouldBeEncrypted(path)
			if !encrypted {
				if !meta.MACOnlyEncrypted {
					b, err := scalarMACBytes(n)
					if err != nil {
						return &diag.Error{Line: n.Line, Field: dotted(path), Msg: "SOPS: cannot compute the MAC of this value", Err: err}
					}
					hash.Write(b)
				}
				return nil
			}
			if n.ShortTag() != "!!str" {
				return &diag.Error{Line: n.Line, Field: dotted(path), Msg: "SOPS: value should be encrypted but is not a string: the file was changed after encryption"}
			}
			if n.Value == "" {
				return nil // SOPS leaves empty values as they are
			}
			plain, typ, err := decryptValue(n.Value, key, strings.Join(path, ":")+":")
			if err != nil {
				return &diag.Error{Line: n.Line, Field: dotted(path), Msg: "SOPS: cannot decrypt this value (was it changed or moved after encryption?)", Err: err}
			}
			repl, macBytes, err := typedValue(plain, typ)
			if err != nil {
				return &diag.Error{Line: n.Line, Field: dotted(path), Msg: "SOPS: decrypted value does not match its declared type " + typ}
			}
			hash.Write(macBytes)
			edits = append(edits, edit{node: n, repl: repl})
		}
		return nil
	}
	if derr := walk(root, nil); derr != nil {
		return "", true, derr
	}

	// Check the MAC: SOPS encrypts it with the data key, the additional data
	// being lastmodified in RFC 3339.
	lm, err := time.Parse(time.RFC3339, meta.LastModified)
	if err != nil {
		return fail(stanzaKey.Line, "sops.lastmodified", "malformed SOPS metadata", err)
	}
	stored, typ, err := decryptValue(meta.MAC, key, lm.Format(time.RFC3339))
	if err != nil || typ != "str" {
		return fail(stanzaKey.Line, "sops.mac", "", fmt.Errorf("%w: the stored MAC does not open with the data key (was sops.mac or sops.lastmodified changed?)", ErrSOPSMACMismatch))
	}
	got := fmt.Sprintf("%X", hash.Sum(nil))
	if subtle.ConstantTimeCompare([]byte(got), stored) != 1 {
		return fail(stanzaKey.Line, "sops.mac", "", fmt.Errorf("%w: the values differ from those SOPS encrypted; the file was changed after encryption (re-encrypt it with sops)", ErrSOPSMACMismatch))
	}

	// Rewrite the text: the stanza first (its positions are the parser's),
	// then the values.
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.Contains(l, "type:comment]") {
			lines[i] = encCommentRE.ReplaceAllString(l, "#")
		}
	}
	if root.Style&yaml.FlowStyle != 0 {
		if err := removeFlowMember(lines, root, stanzaIdx); err != nil {
			return fail(stanzaKey.Line, "sops", "SOPS: cannot remove the metadata", err)
		}
	} else {
		end := len(lines) // exclusive, 0-based
		if stanzaIdx+2 < len(root.Content) {
			end = root.Content[stanzaIdx+2].Line - 1
			// keep comments heading the next key
			for end-1 > stanzaKey.Line-1 && strings.HasPrefix(strings.TrimSpace(lines[end-1]), "#") {
				end--
			}
		} else {
			// the stanza runs to the end of the document; keep a final
			// newline and the document's trailing blank lines as they were.
			for end > stanzaKey.Line && strings.TrimSpace(lines[end-1]) == "" {
				end--
			}
		}
		for i := stanzaKey.Line - 1; i < end; i++ {
			lines[i] = ""
		}
	}
	for _, e := range edits {
		if err := replaceToken(lines, e.node, e.repl); err != nil {
			return fail(e.node.Line, "", "SOPS: cannot rewrite the decrypted value", err)
		}
	}
	return strings.Join(lines, "\n"), true, nil
}

func dotted(path []string) string { return strings.Join(path, ".") }

// shouldBeEncrypted applies the stanza's suffix and regex rules to a value's
// key path, in SOPS's order (the comment regexes are refused earlier).
func (m *sopsMeta) shouldBeEncrypted(path []string) bool {
	encrypted := true
	if m.UnencryptedSuffix != "" {
		for _, p := range path {
			if strings.HasSuffix(p, m.UnencryptedSuffix) {
				encrypted = false
				break
			}
		}
	}
	if m.EncryptedSuffix != "" {
		encrypted = false
		for _, p := range path {
			if strings.HasSuffix(p, m.EncryptedSuffix) {
				encrypted = true
				break
			}
		}
	}
	if m.unencryptedRE != nil {
		for _, p := range path {
			if m.unencryptedRE.MatchString(p) {
				encrypted = false
				break
			}
		}
	}
	if m.encryptedRE != nil {
		encrypted = false
		for _, p := range path {
			if m.encryptedRE.MatchString(p) {
				encrypted = true
				break
			}
		}
	}
	return encrypted
}

// decryptValue opens one ENC[AES256_GCM,...] value; it returns the
// cleartext bytes and the SOPS type (str, int, float, bool, ...). Errors
// never contain the value.
func decryptValue(v string, key []byte, additionalData string) ([]byte, string, error) {
	m := encValueRE.FindStringSubmatch(v)
	if m == nil {
		return nil, "", errors.New("not a SOPS encrypted value (ENC[AES256_GCM,data:...,iv:...,tag:...,type:...])")
	}
	var parts [3][]byte
	for i, name := range []string{"data", "iv", "tag"} {
		b, err := base64.StdEncoding.DecodeString(m[i+1])
		if err != nil {
			return nil, "", fmt.Errorf("%s: bad base64", name)
		}
		parts[i] = b
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, "", err
	}
	if len(parts[1]) == 0 {
		return nil, "", errors.New("empty iv")
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, len(parts[1]))
	if err != nil {
		return nil, "", err
	}
	plain, err := gcm.Open(nil, parts[1], append(parts[0], parts[2]...), []byte(additionalData))
	if err != nil {
		return nil, "", errors.New("AES-GCM authentication failed")
	}
	return plain, m[4], nil
}

// typedValue turns a decrypted value of SOPS type typ into its YAML/JSON
// text (one line) and the bytes SOPS feeds the MAC with.
func typedValue(plain []byte, typ string) (text string, mac []byte, err error) {
	s := string(plain)
	switch typ {
	case "str", "bytes":
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			return "", nil, err
		}
		return strings.TrimSuffix(b.String(), "\n"), plain, nil
	case "int", "int64":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return "", nil, errors.New("bad int")
		}
		t := strconv.FormatInt(n, 10)
		return t, []byte(t), nil
	case "float":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return "", nil, errors.New("bad float")
		}
		t := strconv.FormatFloat(f, 'f', -1, 64)
		return t, []byte(t), nil
	case "bool":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return "", nil, errors.New("bad bool")
		}
		if b {
			return "true", []byte("True"), nil
		}
		return "false", []byte("False"), nil
	}
	return "", nil, fmt.Errorf("unknown SOPS type %q", typ)
}

// scalarMACBytes is the MAC input of a cleartext scalar, as SOPS converts
// the value YAML decodes it to.
func scalarMACBytes(n *yaml.Node) ([]byte, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case string:
		return []byte(v), nil
	case int:
		return []byte(strconv.Itoa(v)), nil
	case float64:
		return []byte(strconv.FormatFloat(v, 'f', -1, 64)), nil
	case bool:
		if v {
			return []byte("True"), nil
		}
		return []byte("False"), nil
	case time.Time:
		return v.MarshalText()
	}
	return nil, fmt.Errorf("unsupported value type %T", v)
}

// replaceToken replaces the scalar n (an ENC[...] value, plain or quoted) in
// lines with repl.
func replaceToken(lines []string, n *yaml.Node, repl string) error {
	if n.Line < 1 || n.Line > len(lines) {
		return errors.New("value position out of range")
	}
	line := []rune(lines[n.Line-1])
	tok := n.Value
	switch n.Style {
	case yaml.DoubleQuotedStyle:
		tok = `"` + tok + `"`
	case yaml.SingleQuotedStyle:
		tok = "'" + tok + "'"
	case 0, yaml.FlowStyle:
	default:
		return errors.New("unsupported scalar style for an encrypted value")
	}
	start := n.Column - 1
	tr := []rune(tok)
	if start < 0 || start+len(tr) > len(line) || string(line[start:start+len(tr)]) != tok {
		return errors.New("encrypted value not found where YAML placed it")
	}
	lines[n.Line-1] = string(line[:start]) + repl + string(line[start+len(tr):])
	return nil
}

// removeFlowMember removes the member at index i (key, value) of the flow
// (JSON) mapping root, with the comma that separates it from its neighbour.
// The removed text becomes blank within its lines so that lines stay true.
func removeFlowMember(lines []string, root *yaml.Node, i int) error {
	text := strings.Join(lines, "\n")
	off := func(line, col int) int {
		o := 0
		for l := 0; l < line-1; l++ {
			o += len(lines[l]) + 1
		}
		r := []rune(lines[line-1])
		return o + len(string(r[:min(col-1, len(r))]))
	}
	k, v := root.Content[i], root.Content[i+1]
	start := off(k.Line, k.Column)
	end, err := flowEnd(text, off(v.Line, v.Column))
	if err != nil {
		return err
	}
	// Take the comma before (or, for the first member, the one after).
	j := start - 1
	for j >= 0 && strings.ContainsRune(" \t\r\n", rune(text[j])) {
		j--
	}
	if j >= 0 && text[j] == ',' {
		start = j
	} else {
		e := end
		for e < len(text) && strings.ContainsRune(" \t\r\n", rune(text[e])) {
			e++
		}
		if e < len(text) && text[e] == ',' {
			end = e + 1
		}
	}
	blank := []byte(text[start:end])
	for x := range blank {
		if blank[x] != '\n' {
			blank[x] = ' '
		}
	}
	out := strings.Split(text[:start]+string(blank)+text[end:], "\n")
	for x := range out {
		out[x] = strings.TrimRight(out[x], " ")
	}
	copy(lines, out)
	return nil
}

// flowEnd returns the offset just past the flow collection or quoted scalar
// starting at text[start].
func flowEnd(text string, start int) (int, error) {
	depth := 0
	inStr := byte(0)
	for i := start; i < len(text); i++ {
		c := text[i]
		if inStr != 0 {
			switch {
			case c == '\\' && inStr == '"':
				i++
			case c == inStr:
				inStr = 0
				if depth == 0 {
					return i + 1, nil
				}
			}
			continue
		}
		switch c {
		case '"', '\'':
			inStr = c
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		}
	}
	return 0, errors.New("unterminated flow mapping")
}

// decrypt returns files with every document that carries a SOPS stanza
// decrypted (the caller's slice and data are not changed) and how many
// documents it decrypted. Errors name the file and line.
func (r *Renderer) decrypt(ctx context.Context, files []source.File, lim source.Limits) ([]source.File, int, diag.List) {
	var errs diag.List
	n := 0
	copied := false
	for i, f := range files {
		if ctx.Err() != nil {
			return files, n, errs
		}
		if slices.Contains(kustomizationNames, path.Base(f.Path)) || !bytes.Contains(f.Data, []byte("sops")) {
			continue
		}
		docs := splitDocuments(f.Data)
		changed := false
		for j, d := range docs {
			text, ok, derr := decryptSOPSWith(ctx, d.text, r.sopsKeys())
			if derr != nil {
				derr.File = f.Path
				if derr.Line > 0 {
					derr.Line += d.line - 1
				} else {
					derr.Line = d.line
				}
				derr.Object = docID(d.text)
				errs = append(errs, derr)
				continue
			}
			if ok {
				docs[j].text, changed = text, true
				n++
			}
		}
		if !changed {
			continue
		}
		if !copied {
			files, copied = slices.Clone(files), true
		}
		var b strings.Builder
		for _, d := range docs {
			b.WriteString(d.text)
		}
		files[i].Data = []byte(b.String())
		// Decrypted values are quoted scalars, but what kustomize reads
		// next is checked like any input.
		if err := source.CheckFiles(ctx, files[i:i+1], lim); err != nil {
			errs = append(errs, diag.AsList(err)...)
		}
	}
	return files, n, errs
}
