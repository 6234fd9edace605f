/*
 * format: the Parquet file format's numbers, one definition for the writer
 * and the reader of lib/parquet/: the enums of parquet-format's
 * parquet.thrift, as far as either of them names them, and the type ids of
 * Thrift's compact protocol (thrift's doc/specs/thrift-compact-protocol.md)
 * in which a file's footer and page headers are written.
 */
#ifndef PIPE_PARQUET_FORMAT_H
#define PIPE_PARQUET_FORMAT_H

/* Type: a column's physical type. */
enum {
	PQ_TYPE_BOOLEAN = 0, PQ_TYPE_INT32 = 1, PQ_TYPE_INT64 = 2, PQ_TYPE_INT96 = 3,
	PQ_TYPE_FLOAT = 4, PQ_TYPE_DOUBLE = 5, PQ_TYPE_BYTE_ARRAY = 6,
	PQ_TYPE_FLBA = 7	/* FIXED_LEN_BYTE_ARRAY */
};

/* ConvertedType: what a physical type stands for (the older annotations). */
enum {
	PQ_CT_UTF8 = 0, PQ_CT_MAP = 1, PQ_CT_MAP_KEY_VALUE = 2, PQ_CT_LIST = 3, PQ_CT_ENUM = 4,
	PQ_CT_DECIMAL = 5, PQ_CT_DATE = 6, PQ_CT_TIME_MILLIS = 7, PQ_CT_TIME_MICROS = 8,
	PQ_CT_TIMESTAMP_MILLIS = 9, PQ_CT_TIMESTAMP_MICROS = 10, PQ_CT_UINT_8 = 11,
	PQ_CT_UINT_64 = 14, PQ_CT_INT_8 = 15, PQ_CT_INT_64 = 18, PQ_CT_JSON = 19, PQ_CT_BSON = 20,
	PQ_CT_INTERVAL = 21
};

/* FieldRepetitionType. */
enum { PQ_REP_REQUIRED = 0, PQ_REP_OPTIONAL = 1, PQ_REP_REPEATED = 2 };

/* Encoding: of a page's values and levels. */
enum {
	PQ_ENC_PLAIN = 0, PQ_ENC_PLAIN_DICTIONARY = 2, PQ_ENC_RLE = 3, PQ_ENC_BIT_PACKED = 4,
	PQ_ENC_DELTA_BINARY_PACKED = 5, PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
	PQ_ENC_DELTA_BYTE_ARRAY = 7, PQ_ENC_RLE_DICTIONARY = 8, PQ_ENC_BYTE_STREAM_SPLIT = 9
};

/* CompressionCodec: of a column chunk's pages. */
enum { PQ_CODEC_UNCOMPRESSED = 0, PQ_CODEC_SNAPPY = 1, PQ_CODEC_GZIP = 2, PQ_CODEC_ZSTD = 6 };

/* PageType. */
enum { PQ_PAGE_DATA = 0, PQ_PAGE_INDEX = 1, PQ_PAGE_DICTIONARY = 2, PQ_PAGE_DATA_V2 = 3 };

/* Thrift compact protocol type ids (the low nibble of a field header). */
enum {
	PQ_T_STOP = 0, PQ_T_TRUE = 1, PQ_T_FALSE = 2, PQ_T_BYTE = 3, PQ_T_I16 = 4,
	PQ_T_I32 = 5, PQ_T_I64 = 6, PQ_T_DOUBLE = 7, PQ_T_BINARY = 8,
	PQ_T_LIST = 9, PQ_T_SET = 10, PQ_T_MAP = 11, PQ_T_STRUCT = 12
};

#endif
