AVX-512 loop kernel, 507 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers, 1024 bytes ahead prefetched for 2 accesses:
  0000  push rbx
  0001  push rbp
  0002  push r12
  0004  push r13
  0006  push r14
  0008  push r15
  000a  mov rax, rsp
  000d  and rsp, 0xffffffffffffffc0
  0011  sub rsp, 0x80
  0018  mov [rsp], rax
  001c  mov [rsp+8], rsi
  0021  mov [rsp+0x10], rdx
  0026  mov rax, [rdi]
  0029  mov [rsp+0x30], rax
  002e  mov rax, [rdi+8]
  0032  mov [rsp+0x38], rax
  0037  mov rax, [rdi+0x10]
  003b  mov [rsp+0x40], rax
  0040  mov rax, [rsp+8]
  0045  cmp rax, [rsp+0x10]
  004a  jge 0x1e9
  0050  mov [rsp+0x60], rax
  0055  mov rax, 0x400
  005f  mov [rsp+0x18], rax
  0064  mov rcx, [rsp+0x30]
  0069  mov rax, [rsp+0x60]
  006e  imul rax, 0x1000
  0075  add rcx, rax
  0078  mov [rsp+0x48], rcx
  007d  mov rcx, [rsp+0x38]
  0082  mov rax, [rsp+0x60]
  0087  imul rax, 4
  008b  add rcx, rax
  008e  mov [rsp+0x50], rcx
  0093  mov rcx, [rsp+0x40]
  0098  mov rax, [rsp+0x60]
  009d  imul rax, 0x1000
  00a4  add rcx, rax
  00a7  mov [rsp+0x58], rcx
  00ac  mov rdx, [rsp+0x48]
  00b1  mov rsi, [rsp+0x50]
  00b6  mov rdi, [rsp+0x58]
  00bb  vbroadcastss zmm0, [rsi]
  00c1  mov r15, [rsp+0x18]
  00c6  xor rbx, rbx
  00c9  lea r14, [r15-0x40]
  00cd  cmp rbx, r14
  00d0  jg 0x179
  00d6  vmovups zmm1, [rdx+rbx*4]
  00dd  vmulps zmm2, zmm1, zmm0
  00e3  vmovups [rdi+rbx*4], zmm2
  00ea  vmovups zmm1, [rdx+rbx*4+0x40]
  00f2  vmulps zmm2, zmm1, zmm0
  00f8  vmovups [rdi+rbx*4+0x40], zmm2
  0100  vmovups zmm1, [rdx+rbx*4+0x80]
  0108  vmulps zmm2, zmm1, zmm0
  010e  vmovups [rdi+rbx*4+0x80], zmm2
  0116  vmovups zmm1, [rdx+rbx*4+0xc0]
  011e  vmulps zmm2, zmm1, zmm0
  0124  vmovups [rdi+rbx*4+0xc0], zmm2
  012c  prefetcht0 [rdx+rbx*4+0x400]
  0134  prefetcht0 [rdx+rbx*4+0x440]
  013c  prefetcht0 [rdx+rbx*4+0x480]
  0144  prefetcht0 [rdx+rbx*4+0x4c0]
  014c  prefetchw [rdi+rbx*4+0x400]
  0154  prefetchw [rdi+rbx*4+0x440]
  015c  prefetchw [rdi+rbx*4+0x480]
  0164  prefetchw [rdi+rbx*4+0x4c0]
  016c  add rbx, 0x40
  0170  cmp rbx, r14
  0173  jle 0xd6
  0179  lea r14, [r15-0x10]
  017d  cmp rbx, r14
  0180  jg short 0x19f
  0182  vmovups zmm1, [rdx+rbx*4]
  0189  vmulps zmm2, zmm1, zmm0
  018f  vmovups [rdi+rbx*4], zmm2
  0196  add rbx, 0x10
  019a  cmp rbx, r14
  019d  jle short 0x182
  019f  cmp rbx, r15
  01a2  jge short 0x1ce
  01a4  mov rcx, r15
  01a7  sub rcx, rbx
  01aa  mov eax, 1
  01af  shl eax, cl
  01b1  sub eax, 1
  01b6  kmovw k1, eax
  01ba  vmovups zmm1{k1}{z}, [rdx+rbx*4]
  01c1  vmulps zmm2, zmm1, zmm0
  01c7  vmovups [rdi+rbx*4]{k1}, zmm2
  01ce  mov rax, [rsp+0x60]
  01d3  add rax, 1
  01d9  mov [rsp+0x60], rax
  01de  cmp rax, [rsp+0x10]
  01e3  jl 0x64
  01e9  mov rsp, [rsp]
  01ed  pop r15
  01ef  pop r14
  01f1  pop r13
  01f3  pop r12
  01f5  pop rbp
  01f6  pop rbx
  01f7  vzeroupper
  01fa  ret

AVX-512 loop kernel, 353 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers:
  0000  push rbx
  0001  push rbp
  0002  push r12
  0004  push r13
  0006  push r14
  0008  push r15
  000a  mov rax, rsp
  000d  and rsp, 0xffffffffffffffc0
  0011  sub rsp, 0x80
  0018  mov [rsp], rax
  001c  mov [rsp+8], rsi
  0021  mov [rsp+0x10], rdx
  0026  mov rax, [rdi]
  0029  mov [rsp+0x30], rax
  002e  mov rax, [rdi+8]
  0032  mov [rsp+0x38], rax
  0037  mov rax, [rsp+0x10]
  003c  sub rax, [rsp+8]
  0041  jle 0x14b
  0047  mov [rsp+0x18], rax
  004c  mov rcx, [rsp+0x30]
  0051  mov rax, [rsp+8]
  0056  lea rcx, [rcx+rax*4]
  005a  mov [rsp+0x40], rcx
  005f  mov rcx, [rsp+0x38]
  0064  mov rax, [rsp+8]
  0069  lea rcx, [rcx+rax*4]
  006d  mov [rsp+0x48], rcx
  0072  mov rdx, [rsp+0x40]
  0077  mov rsi, [rsp+0x48]
  007c  vbroadcastss zmm0, [0x15d]
  0086  mov r15, [rsp+0x18]
  008b  xor rbx, rbx
  008e  lea r14, [r15-0x40]
  0092  cmp rbx, r14
  0095  jg short 0xf6
  0097  vmovups zmm1, [rdx+rbx*4]
  009e  vmulps zmm2, zmm1, zmm0
  00a4  vmovups [rsi+rbx*4], zmm2
  00ab  vmovups zmm1, [rdx+rbx*4+0x40]
  00b3  vmulps zmm2, zmm1, zmm0
  00b9  vmovups [rsi+rbx*4+0x40], zmm2
  00c1  vmovups zmm1, [rdx+rbx*4+0x80]
  00c9  vmulps zmm2, zmm1, zmm0
  00cf  vmovups [rsi+rbx*4+0x80], zmm2
  00d7  vmovups zmm1, [rdx+rbx*4+0xc0]
  00df  vmulps zmm2, zmm1, zmm0
  00e5  vmovups [rsi+rbx*4+0xc0], zmm2
  00ed  add rbx, 0x40
  00f1  cmp rbx, r14
  00f4  jle short 0x97
  00f6  lea r14, [r15-0x10]
  00fa  cmp rbx, r14
  00fd  jg short 0x11c
  00ff  vmovups zmm1, [rdx+rbx*4]
  0106  vmulps zmm2, zmm1, zmm0
  010c  vmovups [rsi+rbx*4], zmm2
  0113  add rbx, 0x10
  0117  cmp rbx, r14
  011a  jle short 0xff
  011c  cmp rbx, r15
  011f  jge short 0x14b
  0121  mov rcx, r15
  0124  sub rcx, rbx
  0127  mov eax, 1
  012c  shl eax, cl
  012e  sub eax, 1
  0133  kmovw k1, eax
  0137  vmovups zmm1{k1}{z}, [rdx+rbx*4]
  013e  vmulps zmm2, zmm1, zmm0
  0144  vmovups [rsi+rbx*4]{k1}, zmm2
  014b  mov rsp, [rsp]
  014f  pop r15
  0151  pop r14
  0153  pop r13
  0155  pop r12
  0157  pop rbp
  0158  pop rbx
  0159  vzeroupper
  015c  ret
  constants (4 bytes):
    3f000000

AVX-512 loop kernel, 635 bytes of machine code, 0 micro-kernel calls per tile, 2 values held in registers, 1024 bytes ahead prefetched for 2 accesses:
  0000  push rbx
  0001  push rbp
  0002  push r12
  0004  push r13
  0006  push r14
  0008  push r15
  000a  mov rax, rsp
  000d  and rsp, 0xffffffffffffffc0
  0011  sub rsp, 0x80
  0018  mov [rsp], rax
  001c  mov [rsp+8], rsi
  0021  mov [rsp+0x10], rdx
  0026  mov rax, [rdi]
  0029  mov [rsp+0x30], rax
  002e  mov rax, [rdi+8]
  0032  mov [rsp+0x38], rax
  0037  mov rax, [rdi+0x10]
  003b  mov [rsp+0x40], rax
  0040  mov rax, [rsp+8]
  0045  cmp rax, [rsp+0x10]
  004a  jge 0x265
  0050  mov [rsp+0x60], rax
  0055  mov rax, 0x400
  005f  mov [rsp+0x18], rax
  0064  mov rcx, [rsp+0x30]
  0069  mov rax, [rsp+0x60]
  006e  imul rax, 0x1000
  0075  add rcx, rax
  0078  mov [rsp+0x48], rcx
  007d  mov rcx, [rsp+0x38]
  0082  mov rax, [rsp+0x60]
  0087  imul rax, 4
  008b  add rcx, rax
  008e  mov [rsp+0x50], rcx
  0093  mov rcx, [rsp+0x40]
  0098  mov rax, [rsp+0x60]
  009d  imul rax, 0x1000
  00a4  add rcx, rax
  00a7  mov [rsp+0x58], rcx
  00ac  mov rdx, [rsp+0x48]
  00b1  mov rsi, [rsp+0x50]
  00b6  mov rdi, [rsp+0x58]
  00bb  vbroadcastss zmm0, [0x277]
  00c5  vbroadcastss zmm1, [rsi]
  00cb  mov r15, [rsp+0x18]
  00d0  xor rbx, rbx
  00d3  lea r14, [r15-0x40]
  00d7  cmp rbx, r14
  00da  jg 0x1cf
  00e0  vmovups zmm2, [rdx+rbx*4]
  00e7  vmaxps zmm3, zmm2, zmm1
  00ed  vcmpunordps k7, zmm2, zmm2
  00f4  vmovaps zmm3{k7}, zmm2
  00fa  vsubps zmm2, zmm3, zmm0
  0100  vmovups [rdi+rbx*4], zmm2
  0107  vmovups zmm2, [rdx+rbx*4+0x40]
  010f  vmaxps zmm3, zmm2, zmm1
  0115  vcmpunordps k7, zmm2, zmm2
  011c  vmovaps zmm3{k7}, zmm2
  0122  vsubps zmm2, zmm3, zmm0
  0128  vmovups [rdi+rbx*4+0x40], zmm2
  0130  vmovups zmm2, [rdx+rbx*4+0x80]
  0138  vmaxps zmm3, zmm2, zmm1
  013e  vcmpunordps k7, zmm2, zmm2
  0145  vmovaps zmm3{k7}, zmm2
  014b  vsubps zmm2, zmm3, zmm0
  0151  vmovups [rdi+rbx*4+0x80], zmm2
  0159  vmovups zmm2, [rdx+rbx*4+0xc0]
  0161  vmaxps zmm3, zmm2, zmm1
  0167  vcmpunordps k7, zmm2, zmm2
  016e  vmovaps zmm3{k7}, zmm2
  0174  vsubps zmm2, zmm3, zmm0
  017a  vmovups [rdi+rbx*4+0xc0], zmm2
  0182  prefetcht0 [rdx+rbx*4+0x400]
  018a  prefetcht0 [rdx+rbx*4+0x440]
  0192  prefetcht0 [rdx+rbx*4+0x480]
  019a  prefetcht0 [rdx+rbx*4+0x4c0]
  01a2  prefetchw [rdi+rbx*4+0x400]
  01aa  prefetchw [rdi+rbx*4+0x440]
  01b2  prefetchw [rdi+rbx*4+0x480]
  01ba  prefetchw [rdi+rbx*4+0x4c0]
  01c2  add rbx, 0x40
  01c6  cmp rbx, r14
  01c9  jle 0xe0
  01cf  lea r14, [r15-0x10]
  01d3  cmp rbx, r14
  01d6  jg short 0x208
  01d8  vmovups zmm2, [rdx+rbx*4]
  01df  vmaxps zmm3, zmm2, zmm1
  01e5  vcmpunordps k7, zmm2, zmm2
  01ec  vmovaps zmm3{k7}, zmm2
  01f2  vsubps zmm2, zmm3, zmm0
  01f8  vmovups [rdi+rbx*4], zmm2
  01ff  add rbx, 0x10
  0203  cmp rbx, r14
  0206  jle short 0x1d8
  0208  cmp rbx, r15
  020b  jge short 0x24a
  020d  mov rcx, r15
  0210  sub rcx, rbx
  0213  mov eax, 1
  0218  shl eax, cl
  021a  sub eax, 1
  021f  kmovw k1, eax
  0223  vmovups zmm2{k1}{z}, [rdx+rbx*4]
  022a  vmaxps zmm3, zmm2, zmm1
  0230  vcmpunordps k7, zmm2, zmm2
  0237  vmovaps zmm3{k7}, zmm2
  023d  vsubps zmm2, zmm3, zmm0
  0243  vmovups [rdi+rbx*4]{k1}, zmm2
  024a  mov rax, [rsp+0x60]
  024f  add rax, 1
  0255  mov [rsp+0x60], rax
  025a  cmp rax, [rsp+0x10]
  025f  jl 0x64
  0265  mov rsp, [rsp]
  0269  pop r15
  026b  pop r14
  026d  pop r13
  026f  pop r12
  0271  pop rbp
  0272  pop rbx
  0273  vzeroupper
  0276  ret
  constants (4 bytes):
    3f800000
