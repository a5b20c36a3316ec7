FROM node:20-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev
# The service runs as the image's unprivileged `node` user; DATA_DIR (./data: uploads in progress) is its own.
RUN mkdir -p data && chown node:node data
USER node
ENV NODE_ENV=production PORT=3000
EXPOSE 3000
CMD ["node", "--max-old-space-size=1024", "dist/src/main.js"]
