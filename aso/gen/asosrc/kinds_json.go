package asosrc

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf16"
)

// handWrittenNote is the note of a kind without generated ARM code.
const handWrittenNote = "not a generated ARM resource (hand-written type); no ARM conversion facts"

// KindsJSON is the content of kinds.json: a JSON array with one kind per
// line, its keys in a fixed order, byte for byte as the shared facts have
// it (compact, ASCII-only strings).
func KindsJSON(kinds []Kind) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i := range kinds {
		if i > 0 {
			b.WriteString(",\n")
		}
		writeKind(&b, &kinds[i])
	}
	b.WriteString("\n]\n")
	return b.Bytes()
}

// kindObj writes one JSON object's members in the order they are added.
type kindObj struct {
	b *bytes.Buffer
	n int
}

func (o *kindObj) key(k string) {
	if o.n > 0 {
		o.b.WriteByte(',')
	}
	o.n++
	kindQuote(o.b, k)
	o.b.WriteByte(':')
}

func (o *kindObj) str(k, v string) { o.key(k); kindQuote(o.b, v) }

// strOrNull writes null for an empty value.
func (o *kindObj) strOrNull(k, v string) {
	if v == "" {
		o.key(k)
		o.b.WriteString("null")
		return
	}
	o.str(k, v)
}

func (o *kindObj) boolean(k string, v bool) { o.key(k); o.b.WriteString(strconv.FormatBool(v)) }

func (o *kindObj) strs(k string, vs []string) {
	o.key(k)
	o.b.WriteByte('[')
	for i, v := range vs {
		if i > 0 {
			o.b.WriteByte(',')
		}
		kindQuote(o.b, v)
	}
	o.b.WriteByte(']')
}

func writeKind(b *bytes.Buffer, k *Kind) {
	b.WriteByte('{')
	o := &kindObj{b: b}
	o.str("group", k.Group)
	o.str("crdVersion", k.CRDVersion)
	o.str("kind", k.Kind)
	o.str("status", k.Status)
	o.strOrNull("supportedFrom", k.SupportedFrom)
	if !k.Generated {
		o.boolean("generated", false)
		o.str("note", handWrittenNote)
		o.strOrNull("armApiVersion", "")
		o.strOrNull("sample", k.Sample)
		b.WriteByte('}')
		return
	}
	o.str("armApiVersion", k.APIVersion)
	o.str("armType", k.ARMType)
	o.str("armUriTemplate", k.ARMURITemplate)
	o.str("scope", k.Scope)
	o.boolean("extension", k.Scope == "extension")
	o.str("armIdTemplate", k.ARMIDTemplate)
	if len(k.URINotes) > 0 {
		o.strs("uriNotes", k.URINotes)
	}
	if k.Owner != nil {
		o.key("owner")
		ow := &kindObj{b: b}
		b.WriteByte('{')
		if k.Owner.Arbitrary {
			ow.boolean("arbitrary", true)
		} else {
			ow.str("group", k.Owner.Group)
			ow.str("kind", k.Owner.Kind)
		}
		b.WriteByte('}')
		if !k.Owner.Arbitrary {
			o.str("ownerKind", k.Owner.Kind)
			o.str("ownerGroup", k.Owner.Group)
		}
	}
	if k.Singleton != nil {
		o.str("singletonName", *k.Singleton)
	} else {
		o.strOrNull("singletonName", "")
	}
	o.boolean("azureNameField", k.AzureNameField)
	if d := k.AzureNameDef; d != nil {
		o.key("azureNameDefault")
		b.WriteByte('{')
		do := &kindObj{b: b}
		do.str("uuidv5", d.UUIDv5)
		do.boolean("namingConventionRandom", d.NamingConventionRandom)
		b.WriteByte('}')
	}
	if len(k.Hooks) > 0 {
		o.strs("hooks", k.Hooks)
	}
	o.strs("operations", k.Operations)
	o.str("specType", k.SpecType)
	o.str("schemaFile", "schema/"+k.Group+"/"+k.CRDVersion+".json")
	o.strOrNull("generatedFrom", k.GeneratedFrom)
	o.strOrNull("sample", k.Sample)
	b.WriteByte('}')
}

// ProvenanceJSON is the content of provenance.json: the source and its
// commit, the counts, and the generated packages no index row names.
func ProvenanceJSON(p Provenance, kinds, schemaFiles int, unlisted []string) []byte {
	var b bytes.Buffer
	line := func(k string, v func()) {
		if b.Len() > 2 {
			b.WriteString(",\n")
		}
		b.WriteString(" ")
		kindQuote(&b, k)
		b.WriteString(": ")
		v()
	}
	str := func(s string) func() { return func() { kindQuote(&b, s) } }
	b.WriteString("{\n")
	line("source", str(p.Source))
	line("license", str(p.License))
	line("commit", str(p.Commit))
	line("commitDate", str(p.CommitDate))
	line("kindEntries", func() { fmt.Fprint(&b, kinds) })
	line("schemaFiles", func() { fmt.Fprint(&b, schemaFiles) })
	line("armJsonNames", str("exact: json tags of the generated ARM payload structs (v2/api/<g>/<v>/arm); none inferred"))
	line("apiPackagesNotListedInIndex", func() {
		if len(unlisted) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, u := range unlisted {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.WriteString("  ")
			kindQuote(&b, u)
		}
		b.WriteString("\n ]")
	})
	b.WriteString("\n}\n")
	return b.Bytes()
}

// kindQuote writes s as a JSON string the way the shared facts spell
// strings (Python's json.dumps): only ", \ and control characters escaped,
// and every non-ASCII character as \uXXXX (UTF-16).
func kindQuote(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	u4 := func(r rune) {
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hex[(r>>shift)&0xf])
		}
	}
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			u4(r)
		case r < 0x80:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			u4(r1)
			u4(r2)
		default:
			u4(r)
		}
	}
	b.WriteByte('"')
}
