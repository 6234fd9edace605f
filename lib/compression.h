/*
 * compression: the codecs a data file is written with, as destination.compression
 * names them (lib/config.h).  zwriter.h writes JSON lines with the first three;
 * parquet.h compresses its pages with any of them.
 */
#ifndef PIPE_COMPRESSION_H
#define PIPE_COMPRESSION_H

enum compression {
	COMPRESSION_ZSTD = 0,
	COMPRESSION_GZIP,
	COMPRESSION_NONE,
	COMPRESSION_SNAPPY	/* format: parquet only */
};

#endif
