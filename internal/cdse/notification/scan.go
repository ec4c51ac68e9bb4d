package notification

import (
	"errors"

	"github.com/cdse-jetstream/receiver/internal/platform/jsonscan"
)

// member is one name/value pair of a JSON object, with the value's raw bytes.
type member struct {
	name  string
	value []byte
}

// arrayElements returns the raw bytes of each element of the JSON array b,
// stopping with errTooMany as soon as there are more than max.
// b must be valid JSON.
func arrayElements(b []byte, max int) ([][]byte, error) {
	var elems [][]byte
	tooMany := false
	_, err := jsonscan.WalkArray(b, 0, func(i int) int {
		if len(elems) == max {
			tooMany = true
			return len(b) // stop: the walk ends at the end of b
		}
		end := jsonscan.ValueEnd(b, i)
		elems = append(elems, b[i:end])
		return end
	})
	if tooMany {
		return nil, errTooMany
	}
	if err != nil {
		return nil, err
	}
	return elems, nil
}

var errTooMany = errors.New("too many elements")
