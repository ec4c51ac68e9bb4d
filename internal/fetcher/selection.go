package fetcher

// Selection is which files of a product the fetcher stores (issue 43,
// "Only the files you need"): for an interest's copy (its Cdse-Interest
// header), that interest's files: list when the interests file gives one;
// else FETCH_FILES; none, the whole archive. The product subjects carry
// no interest: a fetcher that consumes them (the default FETCH_SUBJECTS)
// applies FETCH_FILES only, and one whose FETCH_SUBJECTS are an interest's
// (cdse.interest.<name>.>) gets its list.
type Selection struct {
	// Default is FETCH_FILES.
	Default []string
	// ByInterest are the interests file's files: lists, by interest.
	ByInterest map[string][]string
}

// For is the patterns of a product event routed to interest ("" for a
// product message); nil: the archive.
func (s Selection) For(interest string) []string {
	if files, ok := s.ByInterest[interest]; ok && interest != "" && len(files) > 0 {
		return files
	}
	return s.Default
}
