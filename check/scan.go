package check

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
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
		data, err := io.ReadAll(c.opts.Stdin)
		if err != nil {
			c.inputError(inputProblem{file: stdinName, msg: fmt.Sprintf("%s: %v", stdinName, err)})
			return
		}
		c.checkFile(stdinName, data)
		return
	}
	info, err := os.Stat(path)
	if err != nil {
		c.inputError(readProblem(path, err))
		return
	}
	if !info.IsDir() {
		if !c.excluded(path, ".") {
			c.readAndCheck(path)
		}
		return
	}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			c.inputError(readProblem(p, err))
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p != path && c.excluded(p, relTo(path, p)) {
			if d.IsDir() {
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
		c.inputError(readProblem(path, err))
	}
}

// stdinName is the file name findings in standard input are reported under.
const stdinName = "<stdin>"

// readProblem is a path that could not be read; the error names it.
func readProblem(path string, err error) inputProblem {
	return inputProblem{file: path, msg: err.Error()}
}

// relTo is p relative to the PATH argument root, slash-separated.
func relTo(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}

// excluded reports whether an --exclude glob matches the path relative to
// its PATH argument or the base name, so "*.enc.yaml" works at any depth
// and "clusters/staging" names one directory.
func (c *checker) excluded(p, rel string) bool {
	base := filepath.Base(p)
	for _, g := range c.opts.Exclude {
		if ok, _ := path.Match(g, base); ok {
			return true
		}
		if ok, _ := path.Match(g, rel); ok && rel != "." {
			return true
		}
	}
	return false
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
		c.inputError(readProblem(path, err))
		return
	}
	c.checkFile(path, data)
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
		c.inputError(located(m.file, m.document, m.item, 0, err))
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
	if f, ok := c.classify(m, apiVersion); ok {
		c.report(f)
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

// located turns an error in document doc (and List items) into an input
// problem with its line; offset is the number of lines before the text the
// YAML parser was given.
func located(file string, doc int, items []int, offset int, err error) inputProblem {
	p := inputProblem{file: file, document: doc, item: items, msg: err.Error()}
	var le lineError
	if errors.As(err, &le) {
		p.line, p.msg = le.line, le.msg
	} else if g := yamlLine.FindStringSubmatch(err.Error()); g != nil {
		p.line, _ = strconv.Atoi(g[1])
		p.line += offset
		p.msg = g[2]
	}
	return p
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
