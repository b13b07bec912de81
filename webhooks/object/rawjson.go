package object

// The raw JSON reader (the raw*.go files) is the view's private detail. It
// reads JSON text in place, without building values, so a view can find
// the few members a rule needs in an object of any size, or cut an object
// into the raw text of its members, at the cost of one pass over
// the bytes and no allocation (but for a rawIndex's record of where its
// containers end).
//
// It reads in one of two ways, and every function says which:
//
//   - Strict reading (validJSON, rawIndex.validJSON, and a rawScanner made by
//     newStrict) accepts only what encoding/json accepts, nested at most
//     a given depth. Callers use it on text nothing has validated yet:
//     whatever it accepts decodes, and whatever it refuses (including
//     text that is valid but nested deeper) they hand to encoding/json,
//     which then decides. So the fast path never changes an answer, only
//     its cost.
//   - Lazy reading (objectMembers, arrayElements, and a rawScanner made by
//     newLazy) checks only the structure it walks: the braces, colons and
//     commas of the objects and arrays it enters, and that each value and
//     string it passes ends. It does not look inside the values it skips.
//     Callers use it on text that was validated before (by validJSON), or
//     whose every other part a JSON decoder will validate later. The
//     splits of a rawIndex read the same way, but pass every container the
//     rawIndex recorded when it validated the text in one step.
//
// Neither way panics, on any input.
