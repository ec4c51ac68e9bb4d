// Package versions tells, from a product's name (and, for Sentinel-1, two
// of its dates), which acquisition the product shows and where it stands
// among that acquisition's versions: the first part of issue 42, "Identity
// from the name". It is a leaf: it imports nothing of the project, reads no
// configuration and keeps no state, so that the receiver can call it on its
// hot path and the supersession consumer, the fetcher and `receiver trace`
// can call it again and agree.
//
// [Identify] gives, when a rule applies, an [Identity]:
//
//   - Acquisition: a stable key of what was observed. Its alphabet is
//     [A-Za-z0-9_.=-] ([KeyAlphabet]), it never starts or ends with '.' and
//     is at most 96 bytes: safe as a NATS header value, as a NATS KV key
//     and as one subject token. Two products with the same Acquisition show
//     the same observation; keys of different missions never collide (each
//     starts with its mission's name prefix).
//   - Version: a string of the same alphabet whose plain byte order is the
//     order of the acquisition's versions (greater is newer). Versions are
//     only compared within one Acquisition.
//   - Rule: which rule decided; with it [Relate] tells what two products of
//     one acquisition are to each other, in particular that two Sentinel-2
//     products of the same baseline are siblings, never versions.
//
// When no rule applies it says why, in a [Reason] short enough for a metric
// label. A name no rule knows gets no key, never a wrong one: each rule
// parses its naming convention field by field and refuses anything else.
//
// # Rules, and their sources
//
// Sentinel-2, Level-1C and Level-2A (MMM_MSIXXX_YYYYMMDDTHHMMSS_Nxxyy_ROOO_
// Txxxxx_<product discriminator>[.SAFE], Sentinel-2 Products Specification
// Document S2-PDGS-TAS-DI-PSD and the SentiWiki "S2 Products" naming
// convention): the acquisition is the mission, the level, the datatake
// sensing start, the relative orbit and the tile; the version is the
// processing baseline (higher is newer: N0204 < N0500). The product
// discriminator is not a version: two products of the same baseline with
// another discriminator are siblings (products received at two ground
// stations differ in content, stactools-packages/sentinel2 issue 5; ESA cuts
// L1C products of one tile into parts, STEP forum thread 15041), [Sibling]
// in [Relate]. Baselines 99.xx and 00.xx are not ESA's operational ones (the
// CDSE "Sentinel-2 L2A Baselines" page: 99.99 is CloudFerro's Sen2Cor
// production; sen2like issue 23: 99.xx marks non-official Sen2Cor output;
// N0001 appears on third-party reprocessings): comparing them with an
// operational baseline would be wrong, so they get no key
// ([ReasonUnofficialBaseline]). Other levels (L1B, L2H, L2F, the old long
// names) get no key.
//
// Sentinel-1 (MMM_BB_TTTR_LFPP_<start>_<stop>_OOOOOO_DDDDDD_CCCC[_COG]
// [.SAFE], Sentinel-1 Product Specification, SAFE naming): the acquisition is
// the name up to the mission datatake identifier (mission, mode, product
// type, level, class, polarisation, start, stop, absolute orbit, datatake),
// plus "_COG" for the CDSE's Cloud-Optimised GeoTIFF conversions, which are
// another product type (CDSE documentation, "Handling Sentinel-1 COG_SAFE
// products": IW_GRDH_1S-COG and the like). The trailing unique identifier is
// a CRC of the manifest and orders nothing; a re-sliced product has another
// start or stop and so is another acquisition, not a version (SAR-ARD/s1ard
// issue 233). The version is the processingDate attribute, else the
// PublicationDate, as a fixed-width UTC time; with neither there is no key
// ([ReasonNoDate]).
//
// Sentinel-3 (MMM_II_L_TTTTTT_<start>_<stop>_<creation>_<instance>_GGG_
// P_XX_NNN[.SEN3], Sentinel-3 product naming convention; the instance of a
// frame product is DDDD_CCC_LLL_FFFF: duration, cycle, relative orbit, frame
// along-track coordinate, "User Products Dissemination Concept"): the
// acquisition is the mission, the product type and the frame (cycle,
// relative orbit, along-track coordinate); the version is the timeliness
// (NR < ST < NT), then the baseline collection, then the creation time. The
// duration and the centre are left out: a real NR/NT pair of one frame
// (hygeos/eoread) has durations 0180 and 0179. Stripe and tile products (no
// frame coordinate) and platforms other than operational (O) get no key.
//
// Sentinel-5P (S5P_CCCC_TTTTTTTTTT_<start>_<stop>_OOOOO_CC_PPPPPP_<production>
// [.nc], Sentinel-5P product file naming in the L1B/L2 Input/Output Data
// Specifications): OFFL and RPRO products of one absolute orbit and product
// type are one acquisition; the version is the collection, then the
// processor version, then the production time. NRTI granules get no key
// ([ReasonNRTI]): five-minute granules never align with a whole-orbit OFFL
// product. Other file classes (TEST, OGCA, ...) get no key.
//
// The real name pairs behind each rule, with their sources, are in
// testdata/names.json; testdata/README.md says what is missing.
package versions
