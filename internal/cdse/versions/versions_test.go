package versions

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

type tdName struct {
	Name            string    `json:"name"`
	ProcessingDate  time.Time `json:"processingDate"`
	PublicationDate time.Time `json:"publicationDate"`
	Source          string    `json:"source"`
	Derived         bool      `json:"derived"`
}

type tdCase struct {
	Rule   string   `json:"rule"`
	Kind   string   `json:"kind"`
	Reason Reason   `json:"reason"`
	Note   string   `json:"note"`
	Names  []tdName `json:"names"`
}

func loadCases(t testing.TB) []tdCase {
	t.Helper()
	b, err := os.ReadFile("testdata/names.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []tdCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Cases
}

func (n tdName) identify() (Identity, bool) {
	return Identify(n.Name, Attrs{ProcessingDate: n.ProcessingDate, PublicationDate: n.PublicationDate})
}

// testRule runs the testdata cases of one rule: versions in order, siblings
// as siblings, hard negatives apart, and no key where none is due.
func testRule(t *testing.T, rule string) {
	n := 0
	for _, c := range loadCases(t) {
		if c.Rule != rule {
			continue
		}
		n++
		for _, name := range c.Names {
			if name.Source == "" {
				t.Errorf("%s: no source", name.Name)
			}
		}
		switch c.Kind {
		case "undecided":
			ids := identifyAll(t, c)
			for i := 1; i < len(ids); i++ {
				if a, b := Relate(ids[i-1], ids[i]), Relate(ids[i], ids[i-1]); a != Undecided || b != Undecided {
					t.Errorf("%s: %v and %v, want undecided both ways", c.Note, a, b)
				}
			}
		case "versions", "siblings":
			ids := identifyAll(t, c)
			for i := 1; i < len(ids); i++ {
				want := Older
				if c.Kind == "siblings" {
					want = Sibling
				}
				if got := Relate(ids[i-1], ids[i]); got != want {
					t.Errorf("%s: %s to %s is %v, want %v (%+v, %+v)", c.Note, c.Names[i-1].Name, c.Names[i].Name, got, want, ids[i-1], ids[i])
				}
				if c.Kind == "versions" {
					if got := Relate(ids[i], ids[i-1]); got != Newer {
						t.Errorf("%s: %s to %s is %v, want newer", c.Note, c.Names[i].Name, c.Names[i-1].Name, got)
					}
				}
			}
		case "distinct":
			ids := identifyAll(t, c)
			for i := range ids {
				for j := range ids {
					if i != j && (ids[i].Acquisition == ids[j].Acquisition || Relate(ids[i], ids[j]) != Unrelated) {
						t.Errorf("%s: %s and %s share acquisition %q", c.Note, c.Names[i].Name, c.Names[j].Name, ids[i].Acquisition)
					}
				}
			}
		case "nokey":
			for _, name := range c.Names {
				id, ok := name.identify()
				if ok || id.Reason != c.Reason || id.Acquisition != "" || id.Version != "" {
					t.Errorf("%s: got %+v, %v; want no key for %q", name.Name, id, ok, c.Reason)
				}
			}
		default:
			t.Fatalf("unknown kind %q", c.Kind)
		}
	}
	if n == 0 {
		t.Fatalf("no testdata for %s", rule)
	}
}

func identifyAll(t *testing.T, c tdCase) []Identity {
	t.Helper()
	ids := make([]Identity, len(c.Names))
	for i, name := range c.Names {
		id, ok := name.identify()
		if !ok {
			t.Fatalf("%s: no key (%s)", name.Name, id.Reason)
		}
		if id.Rule.String() != c.Rule || id.Reason != "" {
			t.Errorf("%s: rule %v, reason %q", name.Name, id.Rule, id.Reason)
		}
		if !ValidKey(id.Acquisition) || !ValidKey(id.Version) {
			t.Errorf("%s: key outside the alphabet: %q %q", name.Name, id.Acquisition, id.Version)
		}
		ids[i] = id
	}
	return ids
}

func TestSentinel1(t *testing.T)  { testRule(t, "S1") }
func TestSentinel2(t *testing.T)  { testRule(t, "S2") }
func TestSentinel3(t *testing.T)  { testRule(t, "S3") }
func TestSentinel5P(t *testing.T) { testRule(t, "S5P") }

// TestKeys pins the keys of one real name per rule: they are stored (KV,
// headers) and must not drift.
func TestKeys(t *testing.T) {
	processed := time.Date(2022, 4, 3, 1, 2, 3, 456789000, time.FixedZone("CEST", 2*3600))
	for _, tc := range []struct {
		name      string
		attrs     Attrs
		acq, vers string
	}{
		{"S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE", Attrs{},
			"S2A_MSIL1C_20150704T101006_R022_T32TPS", "0500"},
		{"S1A_IW_GRDH_1SDH_20220402T225426_20220402T225450_042600_051507_D109", Attrs{ProcessingDate: processed},
			"S1A_IW_GRDH_1SDH_20220402T225426_20220402T225450_042600_051507", "P20220402T230203.456789Z"},
		{"S1A_IW_GRDH_1SDV_20151021T063752_20151021T063817_008247_00B9CD_2770_COG.SAFE", Attrs{PublicationDate: processed},
			"S1A_IW_GRDH_1SDV_20151021T063752_20151021T063817_008247_00B9CD_COG", "U20220402T230203.456789Z"},
		{"S3A_OL_1_EFR____20190430T094655_20190430T094955_20190430T114141_0180_044_136_2160_LN1_O_NR_002.SEN3", Attrs{},
			"S3A_OL_1_EFR____044_136_2160", "1_002_20190430T114141"},
		{"S5P_RPRO_L2__CH4____20220825T035306_20220825T053633_25208_03_020600_20240722T153153.nc", Attrs{},
			"S5P_L2__CH4____25208", "03_020600_20240722T153153"},
	} {
		id, ok := Identify(tc.name, tc.attrs)
		if !ok || id.Acquisition != tc.acq || id.Version != tc.vers {
			t.Errorf("%s: got %+v, %v; want %q %q", tc.name, id, ok, tc.acq, tc.vers)
		}
	}
}

// TestNoKey: names built from the conventions (synthetic, said so) for the
// refusals no real name in testdata shows.
func TestNoKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Reason
	}{
		{"", ReasonOtherMission},
		{"LC08_L1TP_193026_20170805_20180523_01_T1", ReasonOtherMission},
		{"S6A_P4_2__LR______20240101T000000_20240101T010000_20240102T000000_3600_100_050_025_EUM_OPE_ST_F09.SEN6", ReasonOtherMission},
		// synthetic: the S5P convention with the NRTI class
		{"S5P_NRTI_L2__NO2____20240101T101112_20240101T101612_32232_03_020600_20240101T104502.nc", ReasonNRTI},
		// synthetic: another file class
		{"S5P_TEST_L2__NO2____20240101T101112_20240101T115242_32232_03_020600_20240103T104502.nc", ReasonUnsupported},
		// synthetic: CloudFerro's baseline 99.99 (CDSE Sentinel-2 L2A Baselines page)
		{"S2A_MSIL2A_20200210T073031_N9999_R049_T37MEU_20230101T000000.SAFE", ReasonUnofficialBaseline},
		// synthetic: a level no rule covers
		{"S2A_MSIL1B_20200210T073031_N0214_R049_T37MEU_20200210T100652.SAFE", ReasonUnsupported},
		// truncated and mangled real names
		{"S2A_MSIL2A_20200210T073031_N0214_R049_T37MEU", ReasonUnparsed},
		{"S2A_MSIL2A_20200210T073031_N0214_R049_T37MEU_20200210T100652.zip", ReasonUnparsed},
		{"S1A_IW_GRDH_1SDH_20220402T225426_20220402T225450_042600_051507_d109", ReasonUnparsed},
		{"S1A_OPER_AUX_POEORB_OPOD_20210302T121528_V20210209T225942_20210211T005942.EOF", ReasonUnparsed},
		{"S3A_OL_1_EFR____20190430T094655_20190430T094955_20190430T114141_0180_044_136_2160_LN1_O_XX_002.SEN3", ReasonUnsupported},
	} {
		id, ok := Identify(tc.name, Attrs{ProcessingDate: time.Now()})
		if ok || id.Reason != tc.want {
			t.Errorf("%q: got %+v, %v; want %q", tc.name, id, ok, tc.want)
		}
	}
}

// TestS1DateSources: processingDate wins over PublicationDate; a date out of
// four-digit years is no date.
func TestS1DateSources(t *testing.T) {
	const name = "S1A_IW_GRDH_1SDH_20220402T225426_20220402T225450_042600_051507_D109"
	early, late := time.Date(2022, 4, 3, 0, 0, 0, 0, time.UTC), time.Date(2022, 5, 1, 0, 0, 0, 0, time.UTC)
	a, _ := Identify(name, Attrs{ProcessingDate: early, PublicationDate: late})
	b, _ := Identify(name, Attrs{PublicationDate: early})
	if a.Version != "P"+b.Version[1:] || b.Version[0] != 'U' {
		t.Errorf("processingDate not preferred, or the date's source not said: %q, %q", a.Version, b.Version)
	}
	if id, ok := Identify(name, Attrs{ProcessingDate: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}); ok {
		t.Errorf("year 10000: %+v", id)
	}
}

// TestRelate covers the relations across rules and without identity.
func TestRelate(t *testing.T) {
	s3 := Identity{Acquisition: "S3A_OL_1_EFR____044_136_2160", Version: "3_002_20190501T131540", Rule: RuleS3}
	if got := Relate(s3, s3); got != Equal {
		t.Errorf("same S3 version: %v", got)
	}
	if got := Relate(Identity{}, Identity{}); got != Unrelated {
		t.Errorf("no identity: %v", got)
	}
	other := s3
	other.Rule = RuleS1
	if got := Relate(s3, other); got != Unrelated {
		t.Errorf("other rule: %v", got)
	}
}

// BenchmarkIdentify: one call per rule on the receiver's hot path.
func BenchmarkIdentify(b *testing.B) {
	attrs := Attrs{ProcessingDate: time.Date(2022, 4, 3, 1, 2, 3, 0, time.UTC)}
	for _, bc := range []struct{ rule, name string }{
		{"S1", "S1A_IW_GRDH_1SDH_20220402T225426_20220402T225450_042600_051507_D109.SAFE"},
		{"S2", "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE"},
		{"S3", "S3A_OL_1_EFR____20190430T094655_20190430T094955_20190501T131540_0179_044_136_2160_LN1_O_NT_002.SEN3"},
		{"S5P", "S5P_RPRO_L2__CH4____20220825T035306_20220825T053633_25208_03_020600_20240722T153153.nc"},
		{"other", "LC08_L1TP_193026_20170805_20180523_01_T1"},
	} {
		b.Run(bc.rule, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Identify(bc.name, attrs)
			}
		})
	}
}

// FuzzIdentify: whatever the name and dates, Identify does not panic, and a
// key it gives holds to the alphabet, as does its version.
//
//	go test ./internal/cdse/versions -run '^$' -fuzz FuzzIdentify -fuzztime 1m
func FuzzIdentify(f *testing.F) {
	for _, c := range loadCases(f) {
		for _, n := range c.Names {
			f.Add(n.Name, n.ProcessingDate.UnixNano(), n.PublicationDate.UnixNano())
		}
	}
	f.Fuzz(func(t *testing.T, name string, processed, published int64) {
		attrs := Attrs{ProcessingDate: time.Unix(0, processed), PublicationDate: time.Unix(0, published)}
		id, ok := Identify(name, attrs)
		if ok != (id.Reason == "") || ok != (id.Rule != NoRule) {
			t.Fatalf("%q: ok %v, %+v", name, ok, id)
		}
		if ok && (!ValidKey(id.Acquisition) || !ValidKey(id.Version)) {
			t.Fatalf("%q: %q %q outside the alphabet", name, id.Acquisition, id.Version)
		}
		if !ok && (id.Acquisition != "" || id.Version != "") {
			t.Fatalf("%q: a key without a rule: %+v", name, id)
		}
	})
}
