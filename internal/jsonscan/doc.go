// Package jsonscan reads the plain shapes of JSON that nearly every .meta
// file and argument schema has (an object's members, strings without \u
// escapes, arrays of such strings) without encoding/json's reflection, and
// checks JSON text (Check, Valid) in one pass, faster than json.Valid.
//
// Each function answers only when its input is valid and plain, and says
// so; the caller leaves everything else (errors included) to encoding/json,
// so a document means the same either way (TestFastPathsAgree and
// FuzzFastPaths compare them with encoding/json; TestCheckAgrees and
// FuzzCheck compare Check with json.Valid and with encoding/json's reading
// of every object's keys).
package jsonscan
