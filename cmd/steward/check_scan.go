package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/stewardhq/steward/webhooks/apimigration"
)

// maxListDepth bounds how deep Lists of Lists are followed.
const maxListDepth = 4

// manifest is one Kubernetes object found in a file, with where it is.
type manifest struct {
	file     string
	document int // 1-based, counting every YAML document in the file
	item     []int
	line     int
	kind     string
	name, ns string
}

// object names the object as Steward's messages do: Kind namespace/name.
func (m manifest) object() string {
	name := m.name
	if name == "" {
		name = "<unnamed>"
	}
	if m.ns != "" {
		return fmt.Sprintf("%s %s/%s", m.kind, m.ns, name)
	}
	return fmt.Sprintf("%s %s", m.kind, name)
}

// position says which document (and List item) the object is.
func (m manifest) position() string {
	s := fmt.Sprintf("document %d", m.document)
	for _, i := range m.item {
		s += fmt.Sprintf(" item %d", i)
	}
	return s
}

// checkPath checks a file, a directory tree or "-" (standard input).
func (c *checker) checkPath(path string) {
	if path == "-" {
		data, err := io.ReadAll(checkStdin)
		if err != nil {
			c.inputError(fmt.Errorf("<stdin>: %w", err))
			return
		}
		c.checkFile("<stdin>", data)
		return
	}
	info, err := os.Stat(path)
	if err != nil {
		c.inputError(err)
		return
	}
	if !info.IsDir() {
		c.readAndCheck(path)
		return
	}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			c.inputError(err)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != path && skipDir(p, d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if !isYAML(d.Name()) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if target, err := os.Stat(p); err == nil && target.IsDir() {
				return nil
			}
		}
		c.readAndCheck(p)
		return nil
	})
	if err != nil {
		c.inputError(err)
	}
}

// skipDir leaves out hidden directories (.git, .github) and the templates
// of Helm charts, which are not YAML until rendered: pipe `helm template`
// output to `steward check -` instead.
func skipDir(path, name string) bool {
	if strings.HasPrefix(name, ".") {
		return true
	}
	if name == "templates" {
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), "Chart.yaml")); err == nil {
			return true
		}
	}
	return false
}

func isYAML(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

func (c *checker) readAndCheck(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		c.inputError(err)
		return
	}
	c.checkFile(path, data)
}

// checkFile checks every document of one file. A document that does not
// parse ends the file (YAML cannot resynchronise after a syntax error);
// the error names the file, the document and the line.
func (c *checker) checkFile(name string, data []byte) {
	c.files++
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for doc := 1; ; doc++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			c.inputError(located(name, doc, nil, err))
			return
		}
		if len(n.Content) == 0 {
			continue
		}
		m := manifest{file: name, document: doc, line: n.Content[0].Line}
		c.checkNode(m, n.Content[0], false, 0)
	}
}

// checkNode checks one document or List item. A top-level document that is
// not a Kubernetes object (no apiVersion and kind strings: a values file, a
// CI workflow, an empty document) is skipped; inside a List it is an error,
// as it is for kubectl. Only apiVersion, kind, metadata.name,
// metadata.namespace and items are read, each checked for its YAML type.
//
// A List's items are checked one by one; a bad item is reported and the
// rest of the List is still checked.
func (c *checker) checkNode(m manifest, n *yaml.Node, inList bool, depth int) {
	n = resolve(n)
	m.line = n.Line
	if err := c.checkObject(m, n, inList, depth); err != nil {
		c.inputError(located(m.file, m.document, m.item, err))
	}
}

func (c *checker) checkObject(m manifest, n *yaml.Node, inList bool, depth int) error {
	apiVersion, errV := scalar(n, "apiVersion")
	kind, errK := scalar(n, "kind")
	if err := errors.Join(errV, errK); err != nil {
		return err
	}
	if n.Kind != yaml.MappingNode || apiVersion == "" || kind == "" {
		if inList {
			return lineError{n.Line, "not a Kubernetes object: it needs apiVersion and kind"}
		}
		return nil
	}
	meta, err := field(n, "metadata", yaml.MappingNode)
	if err != nil {
		return err
	}
	if m.name, err = scalar(meta, "name"); err != nil {
		return err
	}
	if m.ns, err = scalar(meta, "namespace"); err != nil {
		return err
	}
	m.kind = kind
	if kind == "List" || strings.HasSuffix(kind, "List") {
		items, err := field(n, "items", yaml.SequenceNode)
		if err != nil {
			return err
		}
		if items != nil && depth < maxListDepth {
			for i, it := range items.Content {
				item := m
				item.item = append(append([]int(nil), m.item...), i+1)
				c.checkNode(item, it, true, depth+1)
			}
			return nil
		}
	}
	c.objects++
	group, version := splitAPIVersion(apiVersion)
	if f := apimigration.Classify(group, kind, version, c.target); f.Status != apimigration.Untouched {
		c.report(m, f)
	}
	return nil
}

// lineError is an input error at a known line.
type lineError struct {
	line int
	msg  string
}

func (e lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// yamlLine matches the line the YAML parser reports in its errors.
var yamlLine = regexp.MustCompile(`^yaml: line ([0-9]+): (.*)$`)

// located formats an input error compiler-style: file:line: document N
// [item M]: what is wrong.
func located(file string, doc int, items []int, err error) error {
	m := manifest{file: file, document: doc, item: items}
	var le lineError
	if errors.As(err, &le) {
		return fmt.Errorf("%s:%d: %s: %s", file, le.line, m.position(), le.msg)
	}
	if g := yamlLine.FindStringSubmatch(err.Error()); g != nil {
		return fmt.Errorf("%s:%s: %s: %s", file, g[1], m.position(), g[2])
	}
	return fmt.Errorf("%s: %s: %w", file, m.position(), err)
}

// resolve follows aliases (*anchor) to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// field returns the value of key in a mapping, or nil when the mapping or
// the key is absent. It is an error for the value to have another YAML
// type than want, or for the key to appear twice (kubectl refuses both).
func field(n *yaml.Node, key string, want yaml.Kind) (*yaml.Node, error) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	var found *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode || k.Value != key {
			continue
		}
		if found != nil {
			return nil, lineError{k.Line, fmt.Sprintf("%s is given twice (first on line %d)", key, found.Line)}
		}
		found = resolve(n.Content[i+1])
	}
	if found == nil || (found.Kind == yaml.ScalarNode && found.Tag == "!!null") {
		return nil, nil
	}
	if found.Kind != want {
		return nil, lineError{found.Line, fmt.Sprintf("%s is a %s, not a %s", key, kindName(found.Kind), kindName(want))}
	}
	return found, nil
}

// scalar returns a string field of a mapping, "" when absent.
func scalar(n *yaml.Node, key string) (string, error) {
	v, err := field(n, key, yaml.ScalarNode)
	if v == nil || err != nil {
		return "", err
	}
	return v.Value, nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "sequence"
	case yaml.ScalarNode:
		return "string"
	}
	return "YAML node"
}

// splitAPIVersion splits "group/version"; the core group has no slash.
func splitAPIVersion(apiVersion string) (group, version string) {
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		return apiVersion[:i], apiVersion[i+1:]
	}
	return "", apiVersion
}
