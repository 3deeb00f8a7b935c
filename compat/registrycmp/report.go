package registrycmp

import (
	"fmt"
	"io"
	"strings"
)

// ReportInfo is what the report says about the run besides the outcomes.
type ReportInfo struct {
	Notes map[string]string // scenario name → a note on the difference
}

// WriteReport writes the Markdown report: summary, a table of scenarios,
// and each difference in full with its note.
func WriteReport(w io.Writer, info ReportInfo, outs []Outcome) {
	m, n := Summary(outs)
	fmt.Fprintf(w, "# Registry conformance: Gregor's schema registry beside Apicurio Registry %s\n\n", ApicurioVersion)
	fmt.Fprintf(w, "Written by `make registry-conformance` (compat/registrycmp). Each scenario sends the same\n")
	fmt.Fprintf(w, "Confluent Schema Registry API requests, in the same order, to a fresh Gregor (its built-in\n")
	fmt.Fprintf(w, "registry, `schema.registry.listeners`) and to a fresh Apicurio Registry %s (its\n", ApicurioVersion)
	fmt.Fprintf(w, "Confluent-compatible API, `/apis/ccompat/v7`, H2 in memory; built from Maven Central by\n")
	fmt.Fprintf(w, "compat/apicurio, which says why not 3.x). Answers are compared after normalisation: schema\n")
	fmt.Fprintf(w, "ids become `#1`, `#2`, ... in the order each side first returned them in the scenario; `message` texts are\n")
	fmt.Fprintf(w, "dropped (`error_code` and the HTTP status are compared); verbose compatibility `messages`\n")
	fmt.Fprintf(w, "become `<messages>`; a `schema` that is JSON (Avro, JSON Schema) is compared parsed (key\n")
	fmt.Fprintf(w, "order, spacing); lists of subjects and of subject-versions are compared as sets, and\n")
	fmt.Fprintf(w, "`GET /subjects` is cut to the scenario's own subjects (`sNN-`).\n\n")
	fmt.Fprintf(w, "Confluent's own registry is the reference (its API reference,\n")
	fmt.Fprintf(w, "https://docs.confluent.io/platform/current/schema-registry/develop/api.html); it and Karapace\n")
	fmt.Fprintf(w, "cannot be installed here. Apicurio is a second implementation: each difference below has a\n")
	fmt.Fprintf(w, "note saying which side follows Confluent's documented behaviour.\n\n")
	fmt.Fprintf(w, "**%d of %d scenarios match.**\n\n", m, n)
	fmt.Fprintf(w, "| # | Scenario | Match |\n|---|---|---|\n")
	for i, o := range outs {
		mark := "same"
		if !o.Match {
			mark = "**differs**"
		}
		fmt.Fprintf(w, "| %d | %s | %s |\n", i+1, escape(o.Name), mark)
	}
	fmt.Fprintf(w, "\n## Differences\n\n")
	fmt.Fprintf(w, "Each exchange is `METHOD path [request body] -> status answer`; `-` lines are only Apicurio's,\n")
	fmt.Fprintf(w, "`+` lines only Gregor's, the others both sides'.\n\n")
	for i, o := range outs {
		if o.Match {
			continue
		}
		fmt.Fprintf(w, "### %d. %s\n\n", i+1, o.Name)
		if note := info.Notes[o.Name]; note != "" {
			fmt.Fprintf(w, "%s\n\n", note)
		}
		fmt.Fprintf(w, "```diff\n")
		for _, l := range diff(o.Apicurio, o.Gregor) {
			fmt.Fprintln(w, l)
		}
		fmt.Fprintf(w, "```\n\n")
	}
	fmt.Fprintf(w, "## Matching scenarios\n\nThe exchanges, as both sides gave them.\n\n")
	for i, o := range outs {
		if !o.Match {
			continue
		}
		fmt.Fprintf(w, "### %d. %s\n\n```\n%s\n```\n\n", i+1, o.Name, strings.Join(o.Gregor, "\n"))
	}
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// diff is a line diff of a and b (longest common subsequence): common
// lines with two spaces, a's own with "- ", b's own with "+ ".
func diff(a, b []string) []string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out = append(out, "  "+a[i])
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, "+ "+b[j])
			j++
		default:
			out = append(out, "- "+a[i])
			i++
		}
	}
	return out
}
