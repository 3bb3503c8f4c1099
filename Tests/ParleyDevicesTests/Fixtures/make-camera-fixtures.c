// Generates the camera test fixtures (run once; the outputs are committed):
//   clang -O2 make-camera-fixtures.c -lturbojpeg -o /tmp/make-camera-fixtures && /tmp/make-camera-fixtures
// camera-reference-64x48.i420: a 64x48 I420 picture (smooth gradients and four flat colour blocks).
// camera-64x48-{420,422,444,gray}.jpg: that picture compressed by libturbojpeg at quality 92 from YUV planes
// (chroma repeated for 4:2:2 and 4:4:4, so each decodes back to the reference up to JPEG loss).
#include <stdio.h>
#include <stdlib.h>
#include <turbojpeg.h>

enum { W = 64, H = 48, CW = W / 2, CH = H / 2 };
static unsigned char y[W * H], u[CW * CH], v[CW * CH];

static void write_file(const char *name, const unsigned char *data, unsigned long size) {
    FILE *file = fopen(name, "wb");
    if (!file || fwrite(data, 1, size, file) != size) { perror(name); exit(1); }
    fclose(file);
}

static void compress(const char *name, int subsamp) {
    int cw = tjPlaneWidth(1, W, subsamp), ch = tjPlaneHeight(1, H, subsamp);
    unsigned char *cu = malloc(cw * ch), *cv = malloc(cw * ch);
    for (int row = 0; row < ch; row++)
        for (int col = 0; col < cw; col++) {
            int sr = row * CH / ch, sc = col * CW / cw;  // repeat the 4:2:0 chroma
            cu[row * cw + col] = u[sr * CW + sc];
            cv[row * cw + col] = v[sr * CW + sc];
        }
    const unsigned char *planes[3] = {y, cu, cv};
    unsigned char *jpeg = NULL;
    unsigned long size = 0;
    tjhandle handle = tjInitCompress();
    if (tjCompressFromYUVPlanes(handle, planes, W, NULL, H, subsamp, &jpeg, &size, 92, 0) != 0) {
        fprintf(stderr, "%s: %s\n", name, tjGetErrorStr2(handle));
        exit(1);
    }
    write_file(name, jpeg, size);
    tjFree(jpeg);
    tjDestroy(handle);
    free(cu);
    free(cv);
}

int main(void) {
    for (int row = 0; row < H; row++)
        for (int col = 0; col < W; col++) y[row * W + col] = (unsigned char)(40 + col * 2 + row);
    for (int row = 0; row < CH; row++)
        for (int col = 0; col < CW; col++) {
            u[row * CW + col] = (unsigned char)(96 + col * 2);
            v[row * CW + col] = (unsigned char)(160 - row * 2);
        }
    // Four flat blocks, 16x16 luma each, aligned to the chroma grid.
    const unsigned char blocks[4][3] = {{200, 60, 200}, {120, 200, 60}, {60, 160, 110}, {235, 128, 128}};
    for (int b = 0; b < 4; b++)
        for (int row = 16; row < 32; row++)
            for (int col = b * 16; col < b * 16 + 16; col++) {
                y[row * W + col] = blocks[b][0];
                u[(row / 2) * CW + col / 2] = blocks[b][1];
                v[(row / 2) * CW + col / 2] = blocks[b][2];
            }
    unsigned char raw[W * H + 2 * CW * CH];
    for (int i = 0; i < W * H; i++) raw[i] = y[i];
    for (int i = 0; i < CW * CH; i++) { raw[W * H + i] = u[i]; raw[W * H + CW * CH + i] = v[i]; }
    write_file("camera-reference-64x48.i420", raw, sizeof raw);
    compress("camera-64x48-420.jpg", TJSAMP_420);
    compress("camera-64x48-422.jpg", TJSAMP_422);
    compress("camera-64x48-444.jpg", TJSAMP_444);
    compress("camera-64x48-gray.jpg", TJSAMP_GRAY);
    return 0;
}
