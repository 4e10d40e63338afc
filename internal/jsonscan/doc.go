// Package jsonscan reads the plain shapes of JSON that nearly every .meta
// file and argument schema has (an object's members, strings without \u
// escapes, arrays of such strings) without encoding/json's reflection.
//
// Each function answers only when its input is valid and plain, and says
// so; the caller leaves everything else (errors included) to encoding/json,
// so a document means the same either way (TestFastPathsAgree and
// FuzzFastPaths compare them with encoding/json).
package jsonscan
