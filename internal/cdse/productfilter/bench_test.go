package productfilter

import (
	"testing"
)

// interests are 20 filters such as users name: by collection and product
// type, cloud cover, dates, names, size, deletions. The last four of
// withGeometry replace four of them with areas of interest.
var interests = []string{
	"Collection/Name eq 'SENTINEL-2' and Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'productType' and att/OData.CSC.StringAttribute/Value eq 'S2MSI2A')",
	"Collection/Name eq 'SENTINEL-2' and Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le 30.00)",
	"Collection/Name eq 'SENTINEL-1' and Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'productType' and att/OData.CSC.StringAttribute/Value eq 'IW_GRDH_1S-COG')",
	"Collection/Name eq 'SENTINEL-1' and Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'orbitDirection' and att/OData.CSC.StringAttribute/Value eq 'ASCENDING')",
	"Collection/Name eq 'SENTINEL-3' and contains(Name,'OL_1_EFR')",
	"Collection/Name eq 'SENTINEL-5P' and Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'productType' and att/OData.CSC.StringAttribute/Value eq 'L2__NO2___')",
	"startswith(Name,'S2B_MSIL2A') and endswith(Name,'.SAFE')",
	"contains(Name,'_T32TQM_') or contains(Name,'_T32TNS_')",
	"ContentDate/Start gt 2026-11-21T00:00:00.000Z and ContentDate/Start lt 2026-11-22T00:00:00.000Z",
	"PublicationDate ge 2026-11-21T12:00:00.000Z and Online eq true",
	"ModificationDate gt 2026-11-22T00:00:00.000Z and not (Collection/Name eq 'SENTINEL-1')",
	"ContentLength gt 1000000000",
	"DeletionCause eq 'Duplicated product' or DeletionCause eq 'Corrupted product'",
	"Attributes/OData.CSC.IntegerAttribute/any(att:att/Name eq 'relativeOrbitNumber' and att/OData.CSC.IntegerAttribute/Value eq 108)",
	"Attributes/OData.CSC.DateTimeOffsetAttribute/any(att:att/Name eq 'processingDate' and att/OData.CSC.DateTimeOffsetAttribute/Value ge 2026-01-01T00:00:00.000Z)",
	"Collection/Name eq 'SENTINEL-2' and Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'tileId' and att/OData.CSC.StringAttribute/Value eq '32TQM')",
	"Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'productType' and att/OData.CSC.StringAttribute/Value eq 'S2MSI1C') and Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value lt 50)",
	"(Collection/Name eq 'SENTINEL-1' or Collection/Name eq 'SENTINEL-2') and OriginDate ge 2026-11-21T00:00:00.000Z",
	"Id eq '0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f'",
	"not (Online eq true) and ContentLength gt 0",
}

var areas = []string{
	"Collection/Name eq 'SENTINEL-2' and OData.CSC.Intersects(area=geography'SRID=4326;POLYGON((12.655118166047592 47.44667197521409,21.39065656328509 48.347694733853245,28.334291357162826 41.877123516783655,17.47086198383573 40.35854475076158,12.655118166047592 47.44667197521409))')",
	"OData.CSC.Intersects(area=geography'SRID=4326;POLYGON ((6.535492 50.600673, 6.535492 50.937662, 7.271576 50.937662, 7.271576 50.600673, 6.535492 50.600673))')",
	"OData.CSC.Intersects(area=geography'SRID=4326;POINT(-0.5319577002158441 28.65487836189358)')",
	"OData.CSC.Intersects(area=geography'SRID=4326;MULTIPOLYGON(((-6 37,0 37,0 39.6,-5 39.6,-5 44,-6 44,-6 37)),((11 44,13 44,13 47,11 47,11 44)))')",
}

func parseAll(b *testing.B, srcs []string) []*Filter {
	b.Helper()
	fs := make([]*Filter, len(srcs))
	for i, s := range srcs {
		f, err := Parse(s)
		if err != nil {
			b.Fatal(err)
		}
		fs[i] = f
	}
	return fs
}

// BenchmarkFromEntityAndMatch is what reading a whole entity, then
// matching it against 20 filters, costs (interests check's way; the
// receiver reads only what its filters need: BenchmarkRouterMatch in
// internal/ingest/interest), without and with areas of interest (the latter
// includes parsing each footprint once). ns/product is per fixture
// product; ns/filter, for matching alone, is per product and filter.
func BenchmarkFromEntityAndMatch(b *testing.B) {
	fx := fixtures(b)
	n := float64(len(fx))
	plain := parseAll(b, interests)
	geo := parseAll(b, append(append([]string(nil), interests[:len(interests)-len(areas)]...), areas...))
	perProduct := func(b *testing.B, filters int) {
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / n
		b.ReportMetric(ns, "ns/product")
		if filters > 0 {
			b.ReportMetric(ns/float64(filters), "ns/filter")
		}
	}
	b.Run("FromEntity", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range fx {
				if _, err := FromEntity(fx[i].raw); err != nil {
					b.Fatal(err)
				}
			}
		}
		perProduct(b, 0)
	})
	match := func(fs []*Filter) func(b *testing.B) {
		return func(b *testing.B) {
			ps := make([]Product, len(fx))
			for i := range fx {
				ps[i], _ = FromEntity(fx[i].raw)
			}
			b.ReportAllocs()
			for b.Loop() {
				for i := range ps {
					for _, f := range fs {
						f.Match(&ps[i])
					}
				}
			}
			perProduct(b, len(fs))
		}
	}
	b.Run("Match20/no-geometry", match(plain))
	b.Run("Match20/with-geometry", match(geo))
	both := func(fs []*Filter) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i := range fx {
					p, err := FromEntity(fx[i].raw)
					if err != nil {
						b.Fatal(err)
					}
					for _, f := range fs {
						f.Match(&p)
					}
				}
			}
			perProduct(b, 0)
		}
	}
	b.Run("FromEntity+Match20/no-geometry", both(plain))
	b.Run("FromEntity+Match20/with-geometry", both(geo))
}
