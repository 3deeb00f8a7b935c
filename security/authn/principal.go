package authn

// ssl.principal.mapping.rules, Kafka's syntax: a comma-separated list of
// rules tried in order, the first whose pattern matches the whole
// distinguished name (RFC 2253 form, "CN=alice,OU=eng,O=Example") wins:
//
//	RULE:pattern/replacement/      the DN with pattern replaced
//	RULE:pattern/replacement/L     … in lower case
//	RULE:pattern/replacement/U     … in upper case
//	DEFAULT                        the full DN
//
// A '/' inside a pattern or replacement is written '\/'; replacements refer
// to groups as $1. No rule matching means the full DN, as DEFAULT.

import (
	"fmt"
	"regexp"
	"strings"
)

// principalRule is one parsed rule; a nil re is DEFAULT.
type principalRule struct {
	re          *regexp.Regexp // the pattern, unanchored, for the replacement
	whole       *regexp.Regexp // the pattern anchored at both ends
	replacement string
	caseFold    byte // 0, 'L' or 'U'
}

// javaGroupRef turns Java's $1 group references into Go's ${1}.
var javaGroupRef = regexp.MustCompile(`\$(\d+)`)

func parsePrincipalRules(s string) ([]principalRule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return []principalRule{{}}, nil
	}
	var rules []principalRule
	for len(s) > 0 {
		s = strings.TrimLeft(s, " \t\n,")
		if s == "" {
			break
		}
		switch {
		case strings.HasPrefix(s, "DEFAULT"):
			rules = append(rules, principalRule{})
			s = s[len("DEFAULT"):]
		case strings.HasPrefix(s, "RULE:"):
			s = s[len("RULE:"):]
			pat, rest, ok := cutUnescapedSlash(s)
			if !ok {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: rule without a replacement: %q", s)
			}
			repl, rest, ok := cutUnescapedSlash(rest)
			if !ok {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: rule not closed with '/': %q", s)
			}
			r := principalRule{replacement: javaGroupRef.ReplaceAllString(repl, "$${$1}")}
			if len(rest) > 0 && (rest[0] == 'L' || rest[0] == 'U') {
				r.caseFold, rest = rest[0], rest[1:]
			}
			var err error
			if r.re, err = regexp.Compile(pat); err != nil {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: %w", err)
			}
			r.whole = regexp.MustCompile(`^(?:` + pat + `)$`)
			rules = append(rules, r)
			s = rest
		default:
			return nil, fmt.Errorf("ssl.principal.mapping.rules: invalid rule at %q", s)
		}
		s = strings.TrimLeft(s, " \t\n")
		if s != "" && s[0] != ',' {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: expected ',' at %q", s)
		}
	}
	return rules, nil
}

// cutUnescapedSlash splits s at its first '/' not preceded by '\', and
// unescapes "\/" in what comes before.
func cutUnescapedSlash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && s[i+1] == '/' {
			i++
			continue
		}
		if s[i] == '/' {
			return strings.ReplaceAll(s[:i], `\/`, "/"), s[i+1:], true
		}
	}
	return "", "", false
}

// mapPrincipal applies the rules to a distinguished name.
func mapPrincipal(rules []principalRule, dn string) string {
	for _, r := range rules {
		if r.re == nil {
			return dn
		}
		if !r.whole.MatchString(dn) {
			continue
		}
		out := r.re.ReplaceAllString(dn, r.replacement)
		switch r.caseFold {
		case 'L':
			out = strings.ToLower(out)
		case 'U':
			out = strings.ToUpper(out)
		}
		return out
	}
	return dn
}
