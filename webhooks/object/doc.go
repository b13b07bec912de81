// Package object is the one way Steward's rules read the objects of an
// admission request. The serving layer hands each rule a View of the
// request's object and oldObject; the first question asked of a view
// validates and indexes the object in one pass, and every later one
// (metadata, a field, whether two objects are Equal, where they differ:
// Diff) reads only the members it needs, so a rule pays about one read of
// the bytes whatever it asks.
//
// view.go is all a rule calls: View, Diff, Equal, Pointer, and CutObjects,
// which locates the objects in a review for the serving layer; form.go
// says whether an object is in the API server's form. The raw JSON reader
// below them is this package's private detail (raw*.go: scanning,
// validating, indexing, splitting, comparing); the fuzz targets hold the
// views to what encoding/json decodes (mapread_test.go).
package object
