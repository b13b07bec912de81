package fleetguard

// ownershipLabels and ownershipAnnotations are the only keys objectMeta's
// methods read; metaFromRaw keeps no others, so judging an update does
// not copy every label and annotation (kubectl's last-applied
// configuration is often the largest of them).
var (
	ownershipLabels      = []string{LabelHash}
	ownershipAnnotations = []string{AnnotationID, AnnotationOwnerGVK, AnnotationReleaseName, AnnotationReleaseNamespace}
)

// metaFromRaw reads what metaFromMap reads, from an object validJSON
// accepted, without decoding the rest: fields of an unexpected type count
// as absent and, as in a decoded map, the last of repeated keys wins.
// Labels and annotations hold only the ownership keys.
func metaFromRaw(raw []byte) objectMeta {
	d, _ := splitDoc(raw, nil)
	return metaFromDoc(&d)
}

// metaFromDoc is metaFromRaw of an object already split.
func metaFromDoc(d *rawDoc) objectMeta {
	var m objectMeta
	for _, f := range d.metaMembers {
		switch string(f.key) {
		case "name":
			m.Name = rawString(f.val)
		case "generateName":
			m.GenerateName = rawString(f.val)
		case "namespace":
			m.Namespace = rawString(f.val)
		case "labels":
			m.Labels = pickStrings(f.val, ownershipLabels)
		case "annotations":
			m.Annotations = pickStrings(f.val, ownershipAnnotations)
		}
	}
	return m
}

// lastMember returns the value of the last member named key, or nil.
func lastMember(ms []member, key string) []byte {
	var v []byte
	for _, m := range ms {
		if string(m.key) == key {
			v = m.val
		}
	}
	return v
}

// rawString returns the raw value as a string if it is one, else "".
func rawString(v []byte) string {
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	return string(unquote(v))
}

// pickStrings returns the string members named in keys of the raw object
// v, as stringMap would of the decoded object.
func pickStrings(v []byte, keys []string) map[string]string {
	if rawKind(v) != rawObject {
		return nil
	}
	var out map[string]string
	var scratch [32]member
	for _, f := range splitObject(v, scratch[:0]) {
		for _, k := range keys {
			if string(f.key) != k {
				continue
			}
			if f.val[0] != '"' {
				delete(out, k)
				break
			}
			if out == nil {
				out = make(map[string]string, len(keys))
			}
			out[k] = string(unquote(f.val))
			break
		}
	}
	return out
}
