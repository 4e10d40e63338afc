package embedder

// Family is the family of an embedder ID: the ID without what names one
// build of the model or one catalog's fit, so that what was tuned or
// trained with one member (thresholds, the learned last step) is known to
// belong to the others. An ID reads
//
//	NAME/MODEL[-DIGEST][+DERIVED]
//
// where DIGEST, a "-" and at least 6 lowercase hex digits, names a build of
// the model (the built-in table's checksum: "builtin/v1-abbe22c2"), and
// everything from the first "+" is what a CatalogAware embedder derived
// from a catalog (a Fitted one's "+fit-" and a digest of its state). Family
// drops both: "builtin/v1-abbe22c2+fit-0123456789ab" → "builtin/v1". An ID
// without them ("ollama/nomic-embed-text") is its own family.
func Family(id string) string {
	for i := 0; i < len(id); i++ {
		if id[i] == '+' {
			id = id[:i]
			break
		}
	}
	i := len(id) - 1
	for i >= 0 && isLowerHex(id[i]) {
		i--
	}
	if i < 0 || id[i] != '-' || len(id)-i-1 < 6 {
		return id
	}
	return id[:i]
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }
