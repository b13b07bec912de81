package check

import (
	"bytes"
	"errors"
	"io"

	yaml "go.yaml.in/yaml/v3"
)

// checkFile checks every document of one file. The YAML parser cannot go
// on after a syntax error, so the document that does not parse is
// reported (file, document, line) and parsing starts again at the next
// "---" line: one broken document does not hide the rest of the file.
func (c *checker) checkFile(name string, data []byte) {
	c.files++
	starts, implicit := documentStarts(data)
	// first is the index in starts of the chunk's first document; -1 when
	// it is a document at the top of the file without a "---".
	first, from, offset, doc := 0, 0, 0, 1
	if implicit {
		first = -1
	}
	for {
		k, errLine := c.checkDocuments(name, data[from:], &doc, offset)
		if errLine == 0 {
			// The end, or an error without a line (bad UTF-8, control
			// characters), which leaves nowhere safe to resume.
			return
		}
		// Resume after the broken document's own "---", and not before
		// the error: the parser may report the line a flow or quoted
		// scalar started on, which can be earlier still.
		broken := first + k - 1
		next := broken + 1
		for next < len(starts) && starts[next].line < errLine {
			next++
		}
		if next >= len(starts) {
			return
		}
		doc += next - broken
		first, from, offset = next, starts[next].offset, starts[next].line-1
	}
}

// checkDocuments decodes and checks documents until the end of data or a
// syntax error; it returns which document of data failed (1-based) and the
// error's line in the file, or 0 and 0. doc is numbered across the file.
func (c *checker) checkDocuments(name string, data []byte, doc *int, offset int) (k, errLine int) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for k = 1; ; k, *doc = k+1, *doc+1 {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return 0, 0
		}
		if err != nil {
			p := located(name, *doc, nil, offset, err)
			c.inputError(p)
			return k, p.line
		}
		if len(n.Content) == 0 {
			continue
		}
		shiftLines(&n, offset)
		m := manifest{file: name, document: *doc, line: n.Content[0].Line}
		c.checkNode(m, n.Content[0], false, 0)
	}
}

// docStart is a "---" line: its 1-based line number and byte offset.
type docStart struct{ line, offset int }

// documentStarts lists the "---" lines of a file, and whether a document
// precedes the first of them (anything but blank lines, comments and
// directives), which is how the YAML parser numbers documents too.
func documentStarts(data []byte) (starts []docStart, implicit bool) {
	for line, off := 1, 0; off < len(data); line++ {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data) - off
		}
		text := bytes.TrimSuffix(data[off:off+end], []byte("\r"))
		if isDocumentStart(text) {
			starts = append(starts, docStart{line, off})
		} else if t := bytes.TrimSpace(text); len(starts) == 0 && len(t) > 0 && t[0] != '#' && t[0] != '%' {
			implicit = true
		}
		off += end + 1
	}
	return starts, implicit
}

// isDocumentStart reports whether a line is a "---" marker, alone or
// followed by a space and content.
func isDocumentStart(line []byte) bool {
	return bytes.HasPrefix(line, []byte("---")) &&
		(len(line) == 3 || line[3] == ' ' || line[3] == '\t')
}

// shiftLines moves every node's line by offset, so nodes parsed after a
// restart report lines of the whole file. Aliases are not followed: the
// nodes they name are in the tree already.
func shiftLines(n *yaml.Node, offset int) {
	if offset == 0 {
		return
	}
	n.Line += offset
	for _, ch := range n.Content {
		shiftLines(ch, offset)
	}
}
