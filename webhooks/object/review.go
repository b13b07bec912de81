package object

// The serving layer decodes an AdmissionReview without its two objects,
// which are most of its bytes and which rules read through Views: it cuts
// them out of the body first.

// CutObjects finds the values of request.object and request.oldObject in
// a review and returns the body with each replaced by null. ok is false
// when the body is not a JSON object with a request object whose members
// can be walked.
//
// The walk is lazy (newLazy): it checks the members it walks and
// finds where values end, which is all cutObjects needs, and leaves the
// rest to the decoder, which validates what it decodes.
func CutObjects(body []byte) (rest, object, oldObject []byte, ok bool) {
	s := newLazy(body)
	var buf [2][2]int
	cuts := buf[:0] // value ranges to replace, in order
	found := false
	ok = members(&s, func(key rawString) bool {
		if !key.Is("request") || s.Peek() != '{' {
			return s.Value()
		}
		found = true
		return members(&s, func(key rawString) bool {
			v, ok := s.RawValue()
			switch {
			case !ok:
				return false
			case key.Is("object"):
				object = v
			case key.Is("oldObject"):
				oldObject = v
			default:
				return true
			}
			cuts = append(cuts, [2]int{s.Pos() - len(v), s.Pos()})
			return true
		})
	})
	if !ok || !found || !s.End() {
		return nil, nil, nil, false
	}
	if len(cuts) == 0 {
		return body, nil, nil, true
	}
	out := make([]byte, 0, len(body)-len(object)-len(oldObject)+8)
	at := 0
	for _, c := range cuts {
		out = append(out, body[at:c[0]]...)
		out = append(out, "null"...)
		at = c[1]
	}
	return append(out, body[at:]...), object, oldObject, true
}

// members walks the object at s's position, calling each with a member's
// key when s is at its value, which each must pass. An escaped key stops
// the walk: it might spell a member that matters, and only the decoder
// can say.
func members(s *rawScanner, each func(key rawString) bool) bool {
	if !s.OpenObject() {
		return false
	}
	for first := true; ; first = false {
		key, end, ok := s.Member(first)
		switch {
		case !ok || key.Escaped():
			return false
		case end:
			return true
		case !each(key):
			return false
		}
	}
}
