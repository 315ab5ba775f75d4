package access

import (
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

// The tracer reports facts and views word them: these tests read a prediction's words where
// a user does (views.CellWhy is --json's explain, views.CellDisagree its disagree).

// explainOf is what views say about the cell of (a, b) that v predicts.
func explainOf(a, b Proc, v Verdict) string {
	c := Cell(a, b, v)
	return views.CellWhy(&c)
}

// disagreeOf is the cell's disagreement in the views' words.
func disagreeOf(c sessions.Cell) string { return views.CellDisagree(&c) }

// verdictDisagree is the disagreement of the cell of (a, b) that v predicts.
func verdictDisagree(a, b Proc, v Verdict) string { return disagreeOf(Cell(a, b, v)) }

// uncertain says whether v is uncertain of kind k.
func uncertain(v Verdict, k UncertainKind) bool {
	for _, u := range v.Uncertain {
		if u.Kind == k {
			return true
		}
	}
	return false
}
