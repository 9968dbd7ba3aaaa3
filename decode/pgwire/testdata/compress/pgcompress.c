/*
 * pgcompress.c: an independent CompressedMessages encoder built on the
 * real zstd and lz4 C libraries, following "Protocol Compression (fourth
 * attempt)": messages are fed to one streaming context (ZSTD_e_continue /
 * LZ4F_compressUpdate), flushed (ZSTD_e_flush / LZ4F_flush) after every N
 * messages and before the messages never compressed (Z E S C K), a
 * container is sent whenever the output buffer fills, and with txframe the
 * frame is ended (ZSTD_e_end / LZ4F_compressEnd) before a ReadyForQuery
 * reporting idle. Messages before the first ReadyForQuery pass unchanged.
 *
 *   cc -O2 -o pgcompress pgcompress.c -lzstd -llz4
 *   ./pgcompress zstd|lz4 MSGS_PER(0=unbounded) TXFRAME(0|1) OUTBUF IN OUT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <lz4frame.h>

static FILE *out;
static int alg;				/* 2 lz4, 3 zstd */
static size_t outbuf;
static char types[1 << 16];
static size_t ntypes;

static void put32(unsigned char *p, unsigned v)
{
	p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}

/* container writes one CompressedMessages with the pending type string. */
static void container(const unsigned char *data, size_t len)
{
	unsigned char h[6];

	if (len == 0 && ntypes == 0)
		return;
	h[0] = 'z';
	put32(h + 1, (unsigned) (4 + 1 + ntypes + 1 + len));
	h[5] = (unsigned char) alg;
	fwrite(h, 1, 6, out);
	fwrite(types, 1, ntypes, out);
	fputc(0, out);
	fwrite(data, 1, len, out);
	ntypes = 0;
}

/* zstd */
static ZSTD_CCtx *cctx;
static unsigned char *zbuf;
static size_t zpos;

static void zstd_run(const void *src, size_t len, ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = {src, len, 0};

	for (;;)
	{
		ZSTD_outBuffer o = {zbuf, outbuf, zpos};
		size_t rem = ZSTD_compressStream2(cctx, &o, &in, mode);

		if (ZSTD_isError(rem))
		{
			fprintf(stderr, "zstd: %s\n", ZSTD_getErrorName(rem));
			exit(1);
		}
		zpos = o.pos;
		if (zpos == outbuf)
		{
			container(zbuf, zpos);
			zpos = 0;
		}
		if (mode == ZSTD_e_continue ? in.pos == in.size : rem == 0)
			break;
	}
}

/* lz4 */
static LZ4F_cctx *lctx;
static unsigned char *lbuf;
static size_t lpos, lcap;
static int lopen;
static LZ4F_preferences_t prefs;

static void lz4_reserve(size_t n)
{
	if (lpos + n > lcap)
	{
		lcap = (lpos + n) * 2;
		lbuf = realloc(lbuf, lcap);
	}
}

static void lz4_spill(int all)
{
	size_t off = 0;

	while (lpos - off >= outbuf || (all && lpos > off))
	{
		size_t n = lpos - off < outbuf ? lpos - off : outbuf;

		container(lbuf + off, n);
		off += n;
	}
	memmove(lbuf, lbuf + off, lpos - off);
	lpos -= off;
}

static void lz4_check(size_t r)
{
	if (LZ4F_isError(r))
	{
		fprintf(stderr, "lz4: %s\n", LZ4F_getErrorName(r));
		exit(1);
	}
}

static void compress(const unsigned char *m, size_t len)
{
	if (alg == 3)
	{
		zstd_run(m, len, ZSTD_e_continue);
		return;
	}
	if (!lopen)
	{
		lz4_reserve(LZ4F_HEADER_SIZE_MAX);
		lpos += (size_t) 0;
		{
			size_t r = LZ4F_compressBegin(lctx, lbuf + lpos, lcap - lpos, &prefs);

			lz4_check(r);
			lpos += r;
		}
		lopen = 1;
	}
	lz4_reserve(LZ4F_compressBound(len, &prefs));
	{
		size_t r = LZ4F_compressUpdate(lctx, lbuf + lpos, lcap - lpos, m, len, NULL);

		lz4_check(r);
		lpos += r;
	}
	lz4_spill(0);
}

static void flush(void)
{
	if (alg == 3)
	{
		zstd_run(NULL, 0, ZSTD_e_flush);
		container(zbuf, zpos);
		zpos = 0;
		return;
	}
	if (lopen)
	{
		size_t r;

		lz4_reserve(LZ4F_compressBound(0, &prefs));
		r = LZ4F_flush(lctx, lbuf + lpos, lcap - lpos, NULL);
		lz4_check(r);
		lpos += r;
	}
	lz4_spill(1);
	container(NULL, 0);
}

static int open_frame;

static void end_frame(void)
{
	flush();
	if (!open_frame)
		return;
	if (alg == 3)
	{
		zstd_run(NULL, 0, ZSTD_e_end);
		container(zbuf, zpos);
		zpos = 0;
	}
	else if (lopen)
	{
		size_t r;

		lz4_reserve(LZ4F_compressBound(0, &prefs) + 8);
		r = LZ4F_compressEnd(lctx, lbuf + lpos, lcap - lpos, NULL);
		lz4_check(r);
		lpos += r;
		lopen = 0;
		lz4_spill(1);
	}
	open_frame = 0;
}

int main(int argc, char **argv)
{
	FILE *in;
	unsigned char *buf;
	long size, off = 0;
	int per, tx, n = 0, started = 0;

	if (argc != 7)
		return 2;
	alg = strcmp(argv[1], "zstd") == 0 ? 3 : 2;
	per = atoi(argv[2]);
	tx = atoi(argv[3]);
	outbuf = (size_t) atol(argv[4]);
	in = fopen(argv[5], "rb");
	out = fopen(argv[6], "wb");
	if (!in || !out || outbuf == 0)
		return 2;
	fseek(in, 0, SEEK_END);
	size = ftell(in);
	fseek(in, 0, SEEK_SET);
	buf = malloc(size);
	if (fread(buf, 1, size, in) != (size_t) size)
		return 2;

	if (alg == 3)
	{
		cctx = ZSTD_createCCtx();
		zbuf = malloc(outbuf);
	}
	else
	{
		lz4_check(LZ4F_createCompressionContext(&lctx, LZ4F_VERSION));
		memset(&prefs, 0, sizeof(prefs));
		prefs.frameInfo.blockSizeID = LZ4F_max64KB;
		prefs.frameInfo.blockMode = LZ4F_blockLinked;
		prefs.autoFlush = 0;
	}

	while (off + 5 <= size)
	{
		unsigned char t = buf[off];
		size_t len = 1 + ((size_t) buf[off + 1] << 24 | buf[off + 2] << 16 | buf[off + 3] << 8 | buf[off + 4]);
		int never = strchr("ZESCK", t) != NULL;

		if (!started || never)
		{
			flush();
			if (t == 'Z')
			{
				if (tx && buf[off + 5] == 'I')
					end_frame();
				started = 1;
			}
			fwrite(buf + off, 1, len, out);
		}
		else
		{
			types[ntypes++] = (char) t;
			compress(buf + off, len);
			open_frame = 1;
			if (per > 0 && ++n >= per)
			{
				flush();
				n = 0;
			}
		}
		off += len;
	}
	end_frame();
	fclose(out);
	return 0;
}
